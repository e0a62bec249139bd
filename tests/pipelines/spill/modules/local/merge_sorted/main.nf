process MERGE_SORTED {
    tag "${meta.id}"
    label 'process_single'
    publishDir "${params.outdir}", mode: 'copy'

    input:
    tuple val(meta), path(sorted)

    output:
    tuple val(meta), path("${meta.id}.txt"), emit: merged

    script:
    """
    sort -n -m ${sorted} > ${meta.id}.txt
    """
}
