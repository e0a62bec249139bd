/*
 * CHARACTERIZE — measure every storage class's device with fio (src/biossd/characterize.py),
 * one class after another and before any profiled run, so nothing else loads the devices.
 * Publishes OUTDIR/<host>-<class>/device.json, the bandwidth Butil divides by, and the host's
 * facts (kernel, OS, CPU, memory) as OUTDIR/pipeline_info/host-<host>.json.
 */
process CHARACTERIZE {
    tag "${params.storage_classes}"
    label 'host_setup'

    publishDir { "${params.outdir}" }, mode: 'copy',
        saveAs: { name -> name.startsWith('devices/') ? "${host}-${file(name).baseName}/device.json"
                        : name == 'host.json' ? "pipeline_info/host-${host}.json" : null }

    input:
    path storage_json
    val host

    output:
    path 'devices/*.json', emit: records
    path 'host.json'     , emit: host
    path 'versions.yml' , emit: versions

    script:
    """
    biossd storage characterize --input ${storage_json} --budget ${params.characterize_budget} -o devices
    biossd host -o host.json > /dev/null
    rm -rf scratch

    cat <<-END_VERSIONS > versions.yml
    "${task.process}":
        biossd: \$(biossd --version | sed 's/biossd //')
        fio: \$(fio --version | sed 's/fio-//')
    END_VERSIONS
    """

    stub:
    def classes = params.storage_classes.toString().tokenize(',')*.trim()
    """
    mkdir devices
    echo '{"stub": true}' > host.json
    for c in ${classes.join(' ')}; do
        echo '{"stub": true, "spec_row": {"seq_read_mbs": 1, "seq_write_mbs": 1}}' > devices/\$c.json
    done
    echo '"${task.process}": {biossd: stub}' > versions.yml
    """
}
