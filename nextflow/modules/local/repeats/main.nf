// REPEATS: described in meta.yml beside this file (what it does, the meta keys it reads, its inputs and outputs)
process REPEATS {
    tag "${run_dirs instanceof List ? run_dirs.size() : 1} first repeats"
    label 'process_single'
    executor 'local'

    input:
    path run_dirs, stageAs: 'runs/run?'
    val planned

    output:
    path 'repeat_tasks.json', emit: tasks
    path 'repeats_not_run.tsv', emit: not_run
    path 'versions.yml', emit: versions

    script:
    def json = groovy.json.JsonOutput.toJson(planned)
    """
    cat > planned.json <<'END_PLANNED'
    ${json}
    END_PLANNED
    shopt -s nullglob
    biossd study repeats --tasks @planned.json --not-run repeats_not_run.tsv runs/* > repeat_tasks.json
    cat <<-END_VERSIONS > versions.yml
    "${task.process}":
        biossd: \$(biossd --version | sed 's/biossd //')
    END_VERSIONS
    """

    stub:
    def every = groovy.json.JsonOutput.toJson(planned)
    """
    cat > repeat_tasks.json <<'END_PLANNED'
    ${every}
    END_PLANNED
    printf 'tool\\tstorage\\tmem\\tscale\\trep\\twhy\\n' > repeats_not_run.tsv
    echo '"${task.process}": {biossd: stub}' > versions.yml
    """
}
