/*
 * CHARACTERIZE — measure every storage class's device with fio (src/biossd/host/characterize.py),
 * one class after another and before any profiled run, so nothing else loads the devices.
 * Publishes OUTDIR/<host>-<class>/device.json, the bandwidth Butil divides by, and the host's
 * facts (kernel, OS, CPU, memory) as OUTDIR/pipeline_info/host-<host>.json.
 */
include { shellQuote } from '../../../lib/shell'

process CHARACTERIZE {
    tag "${host}"
    // Not 'host_setup': it changes nothing on the host, and on a cluster it measures the node the
    // runs will use (a SLURM job on the first class's partition, --exclusive: conf/modules.config).

    input:
    path storage_json
    val host

    output:
    path 'devices/*.json', emit: records
    path 'host.json'     , emit: host
    path 'versions.yml' , emit: versions

    script:
    def q     = { value -> shellQuote(value) }
    def args  = task.ext.args ?: ''
    """
    biossd storage characterize --input ${q(storage_json)} ${args} -o devices
    biossd host -o host.json > /dev/null
    rm -rf scratch  # fio's directory for classes without a scratch, made by the line above in this task directory

    cat <<-END_VERSIONS > versions.yml
    "${task.process}":
        biossd: \$(biossd --version | sed 's/biossd //')
        fio: \$(fio --version | sed 's/fio-//')
    END_VERSIONS
    """

    stub:
    """
    mkdir devices
    echo '{"stub": true}' > host.json
    for c in \$(python3 -c 'import json,sys; print(" ".join(json.load(open(sys.argv[1]))))' ${storage_json}); do
        echo '{"stub": true, "spec_row": {"seq_read_mbs": 1, "seq_write_mbs": 1}}' > devices/\$c.json
    done
    echo '"${task.process}": {biossd: stub}' > versions.yml
    """
}
