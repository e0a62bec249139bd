process BWA_INDEX {
    tag "${fasta.name}"
    label 'process_single'

    input:
    path fasta

    output:
    path 'bwa', emit: index

    script:
    """
    mkdir bwa
    bwa index -p bwa/genome ${fasta}
    """
}
