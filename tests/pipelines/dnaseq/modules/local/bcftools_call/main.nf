process BCFTOOLS_CALL {
    tag "${meta.id}"
    label 'process_single'
    publishDir "${params.outdir}/vcf", mode: 'copy'

    input:
    tuple val(meta), path(bam), path(bai)
    path fasta

    output:
    tuple val(meta), path("${meta.id}.vcf.gz"), emit: vcf

    script:
    """
    bcftools mpileup -f ${fasta} ${bam} | bcftools call -mv -Oz -o ${meta.id}.vcf.gz
    """
}
