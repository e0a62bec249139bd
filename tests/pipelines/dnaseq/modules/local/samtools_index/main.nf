process SAMTOOLS_INDEX {
    tag "${meta.id}"
    label 'process_single'
    publishDir "${params.outdir}/bam", mode: 'copy'

    input:
    tuple val(meta), path(bam)

    output:
    tuple val(meta), path("*.bai"), emit: bai

    script:
    """
    samtools index ${bam}
    """
}
