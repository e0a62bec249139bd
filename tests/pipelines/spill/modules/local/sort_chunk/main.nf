process SORT_CHUNK {
    tag "${meta.id}"
    label 'process_single'

    input:
    tuple val(meta), path(chunk)

    output:
    tuple val(meta), path("${meta.id}.sorted"), emit: sorted

    script:
    def args = task.ext.args ?: ''
    """
    mkdir -p tmp
    sort -n ${args} -T tmp ${chunk} > ${meta.id}.sorted
    """
}
