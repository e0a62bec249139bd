#!/usr/bin/env nextflow
/*
 * biossd study — entry workflow.
 *
 * What is studied lives here in study/: the tool catalogue (catalogue/*.yaml), the experiment
 * matrix (params in nextflow.config and nextflow_schema.json) and the profiles (ssd, hdd, test).
 * How it runs lives in ../nextflow/: modules, workflows and configs.
 *
 *   nextflow run study -profile test              # whole study, small inputs, this machine
 *   nextflow run study -profile ssd --outdir R    # on a host whose scratch disk is an SSD
 */
nextflow.enable.dsl = 2

include { BIOSSD } from '../nextflow/workflows/biossd'

workflow {
    BIOSSD()
}

// Emulated storage classes stay up for the whole run; take them down however it ended. Then
// count the runs' outcomes.
workflow.onComplete {
    // Provenance of the invocation, beside Nextflow's trace/report/timeline.
    def info = file("${params.outdir}/pipeline_info")
    info.mkdirs()
    def record = [
        command_line: workflow.commandLine, profile: workflow.profile, run_name: workflow.runName,
        session_id: workflow.sessionId.toString(), nextflow_version: nextflow.version.toString(),
        start: workflow.start.toString(), complete: workflow.complete.toString(), success: workflow.success,
        resumed: workflow.resume, stub_run: workflow.stubRun, launch_dir: workflow.launchDir.toString(),
        revision: workflow.commitId ?: workflow.scriptId, params: params.collectEntries { k, v -> [k, v?.toString()] },
    ]
    file("${info}/provenance.json").text = groovy.json.JsonOutput.prettyPrint(groovy.json.JsonOutput.toJson(record)) + "\n"
    def table = file("${params.outdir}/features.csv")
    if( table.exists() && table.size() > 0 ) {
        def rows = table.readLines()
        def col = rows[0].tokenize(',').indexOf('outcome')
        def counts = rows.drop(1).countBy { it.tokenize(',')[col] }
        log.info "biossd: ${rows.size() - 1} runs; outcomes: " + counts.collect { k, v -> "${k} ${v}" }.join(', ')
    }
    def proc = ['biossd', 'storage', 'down', '--root', params.storage_root.toString()].execute()
    proc.waitFor()
    log.info "biossd storage down: ${proc.text.trim()}"
    if( proc.exitValue() != 0 )
        log.warn "biossd storage down failed (run `biossd cleanup`): ${proc.err.text.trim()}"
}
