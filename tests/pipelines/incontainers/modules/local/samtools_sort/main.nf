process SAMTOOLS_SORT {
    tag "${meta.id}"
    label 'process_single'
    container params.samtools_container
    publishDir "${params.outdir}/bam", mode: 'copy', pattern: '*.bam'

    input:
    tuple val(meta), path(bam)

    output:
    tuple val(meta), path("${meta.id}.sorted.bam"), emit: bam
    path "versions.yml", emit: versions

    script:
    def args = task.ext.args ?: ''
    """
    samtools sort ${args} -T tmp -o ${meta.id}.sorted.bam ${bam}
    printf '"${task.process}":\\n    samtools: %s\\n' "\$(samtools --version | head -1 | cut -d' ' -f2)" > versions.yml
    """

    stub:
    """
    touch ${meta.id}.sorted.bam versions.yml
    """
}
