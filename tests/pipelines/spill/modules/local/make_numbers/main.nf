process MAKE_NUMBERS {
    tag "${meta.id}"
    label 'process_single'

    input:
    val meta

    output:
    tuple val(meta), path('chunk_*'), emit: chunks

    script:
    """
    seq 1 ${meta.count} | shuf --random-source=<(yes) > numbers.txt
    split -n l/${meta.chunks} -d numbers.txt chunk_
    rm numbers.txt
    """
}
