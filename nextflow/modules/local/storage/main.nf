// STORAGE_UP: described in meta.yml beside this file (what it does, the meta keys it reads, its inputs and outputs)
include { shellQuote } from '../../../lib/shell'

process STORAGE_UP {
    tag "${classes}"
    label 'host_setup'
    cache false
    executor 'local'

    input:
    val classes
    val options

    output:
    path 'storage.json', emit: json
    path 'versions.yml', emit: versions

    script:
    def q       = { value -> shellQuote(value) }
    def args    = task.ext.args ?: ''
    """
    biossd storage up --classes ${q(classes)} ${args} -o storage.json

    cat <<-END_VERSIONS > versions.yml
    "${task.process}":
        biossd: \$(biossd --version | sed 's/biossd //')
    END_VERSIONS
    """

    stub:
    def json = classes.tokenize(',').collect { "\"${it.trim()}\": {\"scratch\": null, \"emulated\": false}" }.join(', ')
    """
    echo '{${json}}' > storage.json
    echo '"${task.process}": {biossd: stub}' > versions.yml
    """
}
