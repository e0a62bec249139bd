// CAPS: described in meta.yml beside this file (what it does, the meta keys it reads, its inputs and outputs)
include { shellQuote } from '../../../lib/shell'

process CAPS {
    tag "${run_dirs instanceof List ? run_dirs.size() : 1} floor runs"
    label 'process_single'
    executor 'local'

    input:
    path run_dirs, stageAs: 'floors/run?'
    val planned

    output:
    path 'capped.json', emit: tasks
    path 'versions.yml', emit: versions

    script:
    def q = { value -> shellQuote(value) }
    """
    printf '%s\\n' ${q(groovy.json.JsonOutput.toJson(planned))} > planned.json
    biossd study caps --plan @planned.json floors/* > capped.json
    cat <<-END_VERSIONS > versions.yml
    "${task.process}":
        biossd: \$(biossd --version | sed 's/biossd //')
    END_VERSIONS
    """

    stub:
    """
    printf '%s\\n' ${q(groovy.json.JsonOutput.toJson(planned))} > capped.json
    echo '"${task.process}": {biossd: stub}' > versions.yml
    """
}
