process SAMTOOLS_SORT {
    tag "${meta.id}"
    label 'process_single'
    publishDir "${params.outdir}/bam", mode: 'copy'

    input:
    tuple val(meta), path(bam)

    output:
    tuple val(meta), path("${meta.id}.sorted.bam"), emit: bam

    script:
    def args = task.ext.args ?: ''
    """
    samtools sort ${args} -T tmp -o ${meta.id}.sorted.bam ${bam}
    """
}
