// REPORT: described in meta.yml beside this file (what it does, the meta keys it reads, its inputs and outputs)
include { shellQuote } from '../../../lib/shell'

process REPORT {
    tag "${host}"
    label 'process_single'

    input:
    path features_csv
    tuple val(publish), path(run_dirs, stageAs: 'runs/run?')
    path device_records, stageAs: 'devices/*'
    path host_json, stageAs: 'host.json'
    path not_run, stageAs: 'repeats_not_run.tsv'
    path sessions, stageAs: 'sessions.tsv'
    path provenance, stageAs: 'provenance.json'
    path sizing, stageAs: 'sizing.json'
    val host

    output:
    path 'results/report/**', emit: report
    path 'results/pipeline_info/sizing.json', optional: true, emit: sizing
    path 'versions.yml'     , emit: versions

    script:
    def q       = { value -> shellQuote(value) }
    def records = device_records instanceof List ? device_records : [device_records]
    def dirs    = run_dirs instanceof List ? run_dirs : [run_dirs]
    def runs    = [publish, dirs].transpose().collect { rel, dir -> "--run ${q("${rel}=${dir}")}" }.join(' ')
    def devices = records.collect { "--device ${q("${host}-${it.baseName}=${it}")}" }.join(' ')
    """
    biossd layout assemble results ${runs} ${devices} --file ${q("features.csv=${features_csv}")} \\
        --file ${q("pipeline_info/host-${host}.json")}=host.json --file pipeline_info/provenance.json=provenance.json \\
        --file pipeline_info/repeats_not_run.tsv=repeats_not_run.tsv --file pipeline_info/sessions.tsv=sessions.tsv \
        ${sizing ? '--file pipeline_info/sizing.json=sizing.json' : ''}
    biossd report results > /dev/null
    cat <<-END_VERSIONS > versions.yml
    "${task.process}":
        biossd: \$(biossd --version | sed 's/biossd //')
    END_VERSIONS
    """

    stub:
    """
    mkdir -p results/report/figures && touch results/report/figures/stub.png
    echo '"${task.process}": {biossd: stub}' > versions.yml
    """
}
