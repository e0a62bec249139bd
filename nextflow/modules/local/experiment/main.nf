/*
 * EXPERIMENT — one task of a related experiment (src/biossd/experiments/): one
 * point of its sweep, on one storage class, one repeat. `biossd experiment run` copies the
 * input (SYNTH_INPUT's, shared by the tasks that read it) into scratch on the class's device,
 * runs the point's profiled runs (and what the point needs around them: an object server and its
 * FUSE mount, a pair of devices, a concurrent group under the host lock) and removes all of it; the task directory (each run's directory and
 * point.json) is published to meta.publish, OUTDIR/<host>-<storage>/experiments/<id>/<point>/<rep>/.
 */
include { shellQuote } from '../../../lib/shell'

process EXPERIMENT {
    tag "${meta.experiment} ${meta.point} ${meta.storage} #${meta.rep}"
    label 'profiled'
    // Measured runs, one task at a time on a host (a concurrent group runs inside one task).
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
