process SAMTOOLS_INDEX {
    tag "${meta.id}"
    label 'process_single'
    container params.samtools_container
    publishDir "${params.outdir}/bam", mode: 'copy', pattern: '*.bai'

    input:
    tuple val(meta), path(bam)

    output:
    tuple val(meta), path("${bam}.bai"), emit: bai
    path "versions.yml", emit: versions

    script:
    """
    samtools index ${bam}
    printf '"${task.process}":\\n    samtools: %s\\n' "\$(samtools --version | head -1 | cut -d' ' -f2)" > versions.yml
    """

    stub:
    """
    touch ${bam}.bai versions.yml
    """
}
