/*
 * The study's lifecycle, as nf-core's initialisation and completion subworkflows: each step is a
 * `biossd` command (src/biossd/study/lifecycle.py, where the rules live and are tested); Groovy
 * only gathers what Nextflow knows (its params, its session, its process) and says what came back.
 */
include { parseJson } from '../../lib/json'

// A biossd command's JSON answer; the study stops, naming the command, if it gives none.
def biossdJson(List argv) {
    def out = new StringBuilder(), err = new StringBuilder()
    def proc = argv.execute()
    proc.waitForProcessOutput(out, err)
    if( !out.toString().trim() )
        error "${argv.take(3).join(' ')} failed (is biossd on PATH? run `make install`): ${err}"
    return parseJson(out.toString())
}

// The given params as the plan commands read them (text, numbers and booleans as they are).
def givenParams(String host) {
    return params.collectEntries { k, v -> [k, v == null ? null : (v instanceof Number || v instanceof Boolean ? v : v.toString())] } + [host: host]
}

// `biossd <command> plan` (study or experiment) of the given params: the plan, or the study stops
// listing every problem with them.
def biossdPlan(String command, Map given, List extra = []) {
    def argv = ['biossd', command, 'plan', '--params', groovy.json.JsonOutput.toJson(given)] + extra
    def plan = biossdJson(argv)
    if( plan.problems )
        error "The ${command == 'study' ? 'study' : 'experiments'} cannot start; nothing was run:\n  - " + plan.problems.join("\n  - ")
    return plan
}

// What Nextflow knows of this session from its start: the provenance record's fields (`biossd study
// begin` writes it, `biossd study finish` completes it).
def sessionProvenance() {
    return [
        session_id: workflow.sessionId.toString(), run_name: workflow.runName, command_line: workflow.commandLine,
        profile: workflow.profile, nextflow_version: nextflow.version.toString(), start: workflow.start.toString(),
        resumed: workflow.resume, stub_run: workflow.stubRun, launch_dir: workflow.launchDir.toString(),
        revision: workflow.commitId ?: workflow.scriptId, params: params.collectEntries { k, v -> [k, v?.toString()] },
    ]
}

// `biossd study begin`: the folder's plan record (another plan's results moved aside with
// --replace_results), the sizing record the plan took, this session's row and its provenance, begun.
def studyBegin(Map record, String sizing = null) {
    def session = [id: workflow.sessionId.toString(), run_name: workflow.runName, start: workflow.start.toString(),
                   resumed: workflow.resume]
    def argv = ['biossd', 'study', 'begin', '--outdir', params.outdir.toString(),
                '--record', groovy.json.JsonOutput.toJson(record), '--session', groovy.json.JsonOutput.toJson(session),
                '--provenance', groovy.json.JsonOutput.toJson(sessionProvenance()),
                '--launcher-pid', ProcessHandle.current().pid().toString(),
                '--keep', workflow.launchDir.toString(), '--keep', workflow.workDir.toString()]
    if( params.replace_results in [true, 'true'] )
        argv << '--replace-results'
    if( sizing )
        argv += ['--sizing', sizing]
    def out = new StringBuilder(), err = new StringBuilder()
    def proc = argv.execute()
    proc.waitForProcessOutput(out, err)
    if( proc.exitValue() != 0 )
        error err.toString().trim() ?: 'biossd study begin failed (is biossd on PATH? run `make install`)'
    if( out.toString().trim() )
        log.warn out.toString().trim()
    return file("${params.outdir}/pipeline_info")
}

// `biossd study finish`, however the session ended: provenance, this session's row, the outcomes,
// and its emulated storage taken down. A command that owns its output (a file, not a stream
// Nextflow may already have closed after SIGINT/SIGTERM), in a session of its own (a second Ctrl-C
// does not reach it), for this Nextflow process only (another pipeline's disks stay up).
def studyFinish() {
    def record = sessionProvenance() + [complete: workflow.complete.toString(), success: workflow.success]
    try {
        def log_file = file("${params.outdir}/pipeline_info/finish.log")
        log_file.parent.mkdirs()
        def pb = new ProcessBuilder('setsid', '-w', 'biossd', 'study', 'finish', '--outdir', params.outdir.toString(),
                                    '--provenance', groovy.json.JsonOutput.toJson(record),
                                    '--launcher-pid', ProcessHandle.current().pid().toString(),
                                    '--storage-root', params.storage_root.toString())
        pb.redirectErrorStream(true)
        pb.redirectOutput(log_file.toFile())
        def proc = pb.start()
        proc.waitFor()
        log_file.readLines().each { line -> proc.exitValue() == 0 ? log.info(line) : log.error(line) }
    }
    catch( Exception e ) {
        log.error "biossd study finish could not run (${e.message}); emulated storage may still be mounted: run `biossd cleanup`"
    }
}
