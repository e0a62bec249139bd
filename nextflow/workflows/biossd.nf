/*
 * The study: synthesize inputs, profile every (tool × memory cap × scale × repeat) run, and
 * derive the features table.
 */
include { STORAGE_UP   } from '../modules/local/storage/main'
include { CHARACTERIZE } from '../modules/local/characterize/main'
include { SYNTH_INPUT } from '../modules/local/synth_input/main'
include { PROFILE     } from '../modules/local/profile/main'
include { CHAIN       } from '../modules/local/chain/main'
include { FEATURES    } from '../modules/local/features/main'
include { REPORT      } from '../modules/local/report/main'

/*
 * The experiment matrix and every problem with the parameters, from `biossd study plan`
 * (src/biossd/study/matrix.py, where the rules live and are tested): tools (--tools all: the runnable
 * ones, the rest listed as skipped), each tool's caps (--tool_caps overrides --mem_caps; a cap
 * below the catalogue's min_mem is a problem), scales, repeats, classes, and the devices named
 * for them (a missing device, or a scratch directory not on it, is a problem).
 */
def studyPlan(String host) {
    def given = params.collectEntries { k, v -> [k, v == null ? null : (v instanceof Number || v instanceof Boolean ? v : v.toString())] } + [host: host]
    def argv = ['biossd', 'study', 'plan', '--params', groovy.json.JsonOutput.toJson(given)]
    if( workflow.stubRun )
        argv << '--stub'
    def out = new StringBuilder(), err = new StringBuilder()
    def proc = argv.execute()
    proc.waitForProcessOutput(out, err)
    if( !out.toString().trim() )
        error "biossd study plan failed (is biossd on PATH? run `make install`): ${err}"
    def plan = new groovy.json.JsonSlurper().parseText(out.toString())
    if( plan.problems )
        error "The study cannot start; nothing was run:\n  - " + plan.problems.join("\n  - ")
    if( plan.skipped )
        log.warn "--tools all: skipping ${plan.skipped.size()} recipe-only tools: " + plan.skipped.collect { k, v -> "${k} (${v})" }.join('; ')
    return plan
}

workflow BIOSSD {
    main:
    def host   = params.host ?: java.net.InetAddress.localHost.hostName
    def plan   = studyPlan(host)
    def tools  = plan.tools
    def classes = plan.classes
    def scales = plan.scales
    log.info "biossd: ${plan.n_runs} profiled runs: ${tools.size()} tools x caps ${plan.caps.values().flatten().unique().join('/')} x scales ${scales.join('/')} x ${plan.repeats} repeats (scaling runs: ${plan.scaling_repeats}) x ${classes.join('/')}" + (plan.probes ? "; ${plan.probes.size()} cachegrind probes on ${classes[0]}" : '') + (plan.chain_runs ? "; ${plan.chain_runs.size()} chained pipelines x ${classes.join('/')}" : '')

    // Each storage class resolved to its scratch directory ('' = the task directory).
    STORAGE_UP(classes.join(','))
    // Every class's device is measured first; no run starts before that is done.
    CHARACTERIZE(STORAGE_UP.out.json, host)
    ch_classes = STORAGE_UP.out.json
        .flatMap { f -> new groovy.json.JsonSlurper().parse(f).collect { name, info -> [name, info.scratch ?: ''] } }
        .join(CHARACTERIZE.out.records.flatten().map { f -> [f.baseName, f] }, failOnMismatch: true)

    // Every synthetic input the runs read, from the plan: one per (kind, scale) at its kind's size
    // (--input_sizes, else --input_size), and the probes' reduced ones; shared by every run of it.
    ch_inputs = Channel
        .fromList(plan.inputs)
        .map { i -> [[kind: i.kind, scale: i.scale, id: i.id], i.size, params.seed] }
    SYNTH_INPUT(ch_inputs)

    // Every profiled task of the plan, with its whole meta (labels, cap in bytes, input, publish
    // path), in the plan's order: the classes side by side, so that a drift of the host's load
    // falls on both alike. Each is joined to its class's scratch and device record and its input.
    ch_runs = Channel
        .fromList(plan.tasks)
        .map { meta -> [meta.storage, meta] }
        .combine(ch_classes, by: 0)
        .map { storage, meta, scratch, device -> [meta.input, meta, scratch, device] }
        .combine(SYNTH_INPUT.out.input.map { meta, dir -> [meta.id, dir] }, by: 0)
        .toSortedList { a, b -> a[1].order <=> b[1].order }
        .flatMap { it }
        .map { id, meta, scratch, device, dir -> [meta, dir, scratch, device] }
    PROFILE(ch_runs)

    // Fig. 3: the chained pipelines on every class, once every profiled run is done (a chain's
    // staging — copies, indexes — must not load the host under a measured run).
    ch_runs_done = PROFILE.out.run_dir.collect().map { true }.ifEmpty(true)
    ch_chains = Channel
        .fromList(plan.chain_tasks)
        .map { meta -> [meta.storage, meta] }
        .combine(ch_classes, by: 0)
        .map { storage, meta, scratch, device -> [meta.input, meta, scratch, device] }
        .combine(SYNTH_INPUT.out.input.map { meta, dir -> [meta.id, dir] }, by: 0)
        .combine(ch_runs_done)
        .map { id, meta, scratch, device, dir, done -> [meta, dir, scratch, device] }
    CHAIN(ch_chains)
    // Each step's directory with its layout path, meta.publish/<NN-tool>.
    ch_step_dirs = CHAIN.out.step_dirs
        .flatMap { meta, dirs -> (dirs instanceof List ? dirs : [dirs]).collect { d -> ["${meta.publish}/${d.name}".toString(), d] } }

    // Timed runs make the features table; the report also reads the probes (Fig. 10) and the
    // chained pipelines' steps (Fig. 3).
    ch_run_dirs = PROFILE.out.run_dir.filter { meta, dir -> !meta.probe }.map { meta, dir -> dir }.collect()
    FEATURES(ch_run_dirs)
    if( !params.skip_report )
        REPORT(FEATURES.out.table,
               PROFILE.out.run_dir.map { meta, dir -> [meta.publish, dir] }.mix(ch_step_dirs)
                   .toSortedList { a, b -> a[0] <=> b[0] }
                   .map { pairs -> [pairs.collect { it[0] }, pairs.collect { it[1] }] },
               CHARACTERIZE.out.records.collect(), CHARACTERIZE.out.host, host)

    // Provenance: every tool's version as each task measured it (nf-core's software_versions).
    STORAGE_UP.out.versions
        .mix(CHARACTERIZE.out.versions, SYNTH_INPUT.out.versions, PROFILE.out.versions, CHAIN.out.versions,
             FEATURES.out.versions, params.skip_report ? Channel.empty() : REPORT.out.versions)
        .map { f -> f.text }
        .unique()
        .collectFile(name: 'software_versions.yml', storeDir: "${params.outdir}/pipeline_info", sort: true)

    emit:
    features = FEATURES.out.table
}
