/*
 * STORAGE_UP — resolve the run's storage classes (src/biossd/measure/storage.py): a real class keeps
 * params.scratch_dir (or the task directory); an emulated one gets an emulated HDD mounted
 * under the storage root. Emits storage.json: {class: {scratch, emulated, profile, ...}}.
 * The emulations stay up for the PROFILE tasks; study/main.nf takes them down on completion.
 * Each is owned by this Nextflow process (its pid and start time): only it takes them down, and
 * another pipeline, whatever its launch directory, never does. First, what an earlier session
 * left (after a SIGKILL of Nextflow: an orphaned run, a stale emulation) is reconciled.
 * Never cached: on -resume the emulations must be brought up again.
 */
include { shellQuote } from '../../../lib/shell'

process STORAGE_UP {
    tag "${classes}"
    label 'host_setup'
    cache false
    // On the launch host whatever the executor: the emulated classes are mounted here, and the
    // workflow's end takes them down here.
    executor 'local'

    input:
    val classes
    // The emulated disks' size and scaling as planned: [emulate_size: ..., data_memory: ...].
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
