// EXPERIMENT: described in meta.yml beside this file (what it does, the meta keys it reads, its inputs and outputs)
include { shellQuote } from '../../../lib/shell'

process EXPERIMENT {
    tag "${meta.experiment} ${meta.point} ${meta.storage} #${meta.rep}"
    label 'profiled'
    maxForks workflow.stubRun ? 64 : 1

    input:
    tuple val(meta), val(scratch_root), val(storage), path(device_record, stageAs: 'device.json'), path(input_dir, stageAs: 'input')

    output:
    tuple val(meta), path('task'), emit: task_dir
    path 'versions.yml'          , emit: versions

    script:
    def q       = { value -> shellQuote(value) }
    def scratch = scratch_root ? q("${scratch_root}/biossd-${task.hash ?: task.index}") : '"$PWD/scratch"'
    def taskJson    = groovy.json.JsonOutput.toJson(meta)
    def storageJson = groovy.json.JsonOutput.toJson(storage)
    """
    printf '%s\\n' ${q(taskJson)} > task.json
    printf '%s\\n' ${q(storageJson)} > storage.json
    biossd experiment run --task @task.json --storage @storage.json --scratch ${scratch} --out task \\
        --device-record device.json --input input

    cat <<-END_VERSIONS > versions.yml
    "${task.process}":
        biossd: \$(biossd --version | sed 's/biossd //')
    END_VERSIONS
    """

    stub:
    """
    mkdir task
    echo '"${task.process}": {biossd: stub}' > versions.yml
    """
}
