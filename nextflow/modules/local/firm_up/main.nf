// FIRM_UP: described in meta.yml beside this file (what it does, the meta keys it reads, its inputs and outputs)
include { shellQuote } from '../../../lib/shell'

process FIRM_UP {
    tag "${run_dirs instanceof List ? run_dirs.size() : 1} runs"
    label 'process_single'
    executor 'local'

    input:
    path run_dirs, stageAs: 'runs/run?'
    val planned
    tuple val(fast), val(slow)

    output:
    path 'firm_tasks.json', emit: tasks
    path 'versions.yml', emit: versions

    script:
    def q = { value -> shellQuote(value) }
    """
    printf '%s\\n' ${q(groovy.json.JsonOutput.toJson(planned))} > planned.json
    biossd study firm-up --tasks @planned.json --fast ${q(fast)} --slow ${q(slow)} runs/* > firm_tasks.json
    cat <<-END_VERSIONS > versions.yml
    "${task.process}":
        biossd: \$(biossd --version | sed 's/biossd //')
    END_VERSIONS
    """

    stub:
    """
    echo '[]' > firm_tasks.json
    echo '"${task.process}": {biossd: stub}' > versions.yml
    """
}
