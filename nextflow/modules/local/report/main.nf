/*
 * REPORT — the notebooks (papermill) over this invocation's result set, into OUTDIR/report/
 * (figures, tables, executed notebooks). The runs reach this task as staged inputs with their
 * layout paths (each run's meta.publish, in the same order), so it first lays them out as a
 * result set (`biossd layout assemble`: links at their layout paths, each class's device record,
 * the host's facts, the run table, the parameters and the sizing record they came from, if any),
 * then renders over that. Skipped with --skip_report; `biossd report OUTDIR [MORE...]` re-renders by hand.
 */
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
    path earlier_sessions, stageAs: 'earlier_sessions.tsv'
    path sizing, stageAs: 'sizing.json'
    val launcher
    val host

    output:
    path 'results/report/**', emit: report
    path 'results/pipeline_info/sizing.json', optional: true, emit: sizing
    path 'versions.yml'     , emit: versions

    script:
    def q       = { value -> shellQuote(value) }
    // One class gives one file (a Path, whose collect would walk its name parts), several a list.
    def records = device_records instanceof List ? device_records : [device_records]
    def dirs    = run_dirs instanceof List ? run_dirs : [run_dirs]
    def runs    = [publish, dirs].transpose().collect { rel, dir -> "--run ${q("${rel}=${dir}")}" }.join(' ')
    def devices = records.collect { "--device ${q("${host}-${it.baseName}=${it}")}" }.join(' ')
    def record  = groovy.json.JsonOutput.toJson([
        command_line: workflow.commandLine, profile: workflow.profile, run_name: workflow.runName,
        params: params.collectEntries { k, v -> [k, v?.toString()] }])
    """
    printf '%s\\n' ${q(record)} > provenance.json
    # The sessions whose runs the result set holds: the earlier ones of this folder, and this one.
    if [ -s earlier_sessions.tsv ]; then cp earlier_sessions.tsv sessions.tsv
    else printf 'session_id\\trun_name\\tboot_id\\tpid\\tstart_ticks\\tstart\\tcomplete\\tsuccess\\tresumed\\n' > sessions.tsv; fi
    printf '%s\\t%s\\t%s\\t%s\\t%s\\t%s\\t\\t\\t%s\\n' ${[launcher.id, launcher.run_name, launcher.boot_id, launcher.pid, launcher.start_ticks, launcher.start, launcher.resumed].collect { q(it) }.join(' ')} >> sessions.tsv
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
