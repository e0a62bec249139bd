// CHARACTERIZE: described in meta.yml beside this file (what it does, the meta keys it reads, its inputs and outputs)
include { shellQuote } from '../../../lib/shell'

process CHARACTERIZE {
    tag "${host}"

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
