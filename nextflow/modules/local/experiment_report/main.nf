// EXPERIMENT_REPORT: described in meta.yml beside this file (what it does, the meta keys it reads, its inputs and outputs)
include { shellQuote } from '../../../lib/shell'

process EXPERIMENT_REPORT {
    tag "${experiments}"
    label 'process_single'

    input:
    tuple val(publish), path(task_dirs, stageAs: 'tasks/task?')
    path device_records, stageAs: 'devices/*'
    val host
    val experiments

    output:
    path 'results/experiments/*.csv', emit: tables
    path 'results/report/**'        , emit: report, optional: true
    path 'versions.yml'             , emit: versions

    script:
    def q       = { value -> shellQuote(value) }
    def records = device_records instanceof List ? device_records : [device_records]
    def dirs    = task_dirs instanceof List ? task_dirs : [task_dirs]
    def runs    = [publish, dirs].transpose().collect { rel, dir -> "--run ${q("${rel}=${dir}")}" }.join(' ')
    def devices = records.collect { "--device ${q("${host}-${it.baseName}=${it}")}" }.join(' ')
    def skip    = task.ext.skip_report ? 'true' : 'false'
    """
    biossd layout assemble results ${runs} ${devices}
    biossd experiment table results --experiment ${q(experiments)}
    if [ ${skip} = false ]; then
        biossd report results --experiments-only > /dev/null
    fi

    cat <<-END_VERSIONS > versions.yml
    "${task.process}":
        biossd: \$(biossd --version | sed 's/biossd //')
    END_VERSIONS
    """

    stub:
    """
    mkdir -p results/experiments && touch results/experiments/stub.csv
    echo '"${task.process}": {biossd: stub}' > versions.yml
    """
}
