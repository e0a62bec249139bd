process BWA_MEM {
    tag "${meta.id}"
    label 'process_single'

    input:
    tuple val(meta), path(reads)
    path index

    output:
    tuple val(meta), path("${meta.id}.bam"), emit: bam

    script:
    """
    bwa mem -t ${task.cpus} ${index}/genome ${reads} | samtools view -b -o ${meta.id}.bam -
    """
}
