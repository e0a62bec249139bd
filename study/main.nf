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
 *   nextflow run study -profile test --experiment sort_memory   # one of the four related experiments
 */
nextflow.enable.dsl = 2

include { BIOSSD; thisSession } from '../nextflow/workflows/biossd'
include { EXPERIMENTS } from '../nextflow/workflows/experiments'

// --experiment NAME[,NAME] (or all) runs the four related experiments instead of the
// study (study/experiments/, at --experiment_size).
workflow {
    // --publish_mode link hard-links each run directory into --outdir (nothing is written while
    // the next run measures); that needs --outdir on the work directory's file system.
    if( params.publish_mode == 'link' && !workflow.stubRun ) {
        def out = file(params.outdir)
        def existing = { path -> while( !path.exists() ) path = path.parent; path }
        def dev = { path -> java.nio.file.Files.getAttribute(existing(path), 'unix:dev') }
        if( dev(out) != dev(workflow.workDir) )
            error "--publish_mode link: --outdir ${out} is not on the file system of the work directory ${workflow.workDir}; use --publish_mode copy or another --outdir"
    }
    if( params.experiment )
        EXPERIMENTS()
    else
        BIOSSD()
}

// At the end, however the run ended: the provenance record, the count of outcomes, and the
// emulated storage classes taken down (each step guarded, so a failing one skips no other).
workflow.onComplete {
    try {
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
        // Every session that wrote into this folder, one line each (a resumed study's runs come
        // from several): its runs name this process as their owner (pid and start ticks, with the
        // boot), so the report can say which session measured which run.
        def me = thisSession()
        def sessions = file("${info}/sessions.tsv")
        if( !sessions.exists() )
            sessions.text = "session_id\trun_name\tboot_id\tpid\tstart_ticks\tstart\tcomplete\tsuccess\tresumed\n"
        sessions.append([me.id, me.run_name, me.boot_id, me.pid, me.start_ticks, me.start, workflow.complete,
                         workflow.success, me.resumed].join('\t') + "\n")
        // The outcomes of this session's runs: only a study that completed wrote its features
        // table (an interrupted one leaves the earlier session's, which is not this one's count).
        def table = file("${params.outdir}/features.csv")
        if( workflow.success && !workflow.stubRun && table.exists() && table.size() > 0 ) {
            def rows = table.readLines()
            def col = rows[0].tokenize(',').indexOf('outcome')
            def counts = rows.drop(1).countBy { it.tokenize(',')[col] }
            log.info "biossd: ${rows.size() - 1} runs; outcomes: " + counts.collect { k, v -> "${k} ${v}" }.join(', ')
        }
    }
    catch( Exception e ) {
        log.error "biossd: writing provenance or the outcome summary failed: ${e.message}"
    }
    // Taken down by a command that owns its output (a file, not a stream Nextflow may already have
    // closed while shutting down after SIGINT/SIGTERM), in a session of its own (a second Ctrl-C
    // does not reach it), for this Nextflow process only (another pipeline's disks stay up).
    try {
        def log_file = file("${params.outdir}/pipeline_info/storage-down.log")
        log_file.parent.mkdirs()
        def pb = new ProcessBuilder('setsid', '-w', 'biossd', 'storage', 'down', '--root', params.storage_root.toString(),
                                    '--owner-pid', ProcessHandle.current().pid().toString())
        pb.redirectErrorStream(true)
        pb.redirectOutput(log_file.toFile())
        def proc = pb.start()
        proc.waitFor()
        def said = log_file.text.trim()
        if( proc.exitValue() != 0 )
            log.error "biossd storage down failed; emulated storage may still be mounted: run `biossd cleanup` (${said})"
        else
            log.info "biossd storage down: ${said}"
    }
    catch( Exception e ) {
        log.error "biossd storage down could not run (${e.message}); emulated storage may still be mounted: run `biossd cleanup`"
    }
}
