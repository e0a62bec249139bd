/*
 * The study: synthesize inputs, profile every (tool × memory cap × scale × repeat) run, and
 * derive the features table.
 */
include { STORAGE_UP   } from '../modules/local/storage/main'
include { CHARACTERIZE } from '../modules/local/characterize/main'
include { STUDY_INPUT } from '../modules/local/study_input/main'
include { TOOL_VERSION } from '../modules/local/tool_version/main'
include { PREPARE     } from '../modules/local/prepare/main'
include { PROFILE     } from '../modules/local/profile/main'
include { PROFILE as PROFILE_REPEAT } from '../modules/local/profile/main'
include { PROFILE as PROFILE_FIRM } from '../modules/local/profile/main'
include { PROFILE as PROFILE_FLOOR } from '../modules/local/profile/main'
include { CAPS        } from '../modules/local/caps/main'
include { FIRM_UP     } from '../modules/local/firm_up/main'
include { REPEATS     } from '../modules/local/repeats/main'
include { CHAIN       } from '../modules/local/chain/main'
include { FEATURES    } from '../modules/local/features/main'
include { REPORT      } from '../modules/local/report/main'
include { biossdJson; biossdPlan; givenParams; studyBegin } from '../subworkflows/local/study_lifecycle'
include { parseJson } from '../lib/json'

/*
 * The experiment matrix and every problem with the parameters, from `biossd study plan`
 * (src/biossd/study/plan/matrix.py, where the rules live and are tested): tools (--tools all: the runnable
 * ones, the rest listed as skipped), each tool's caps (--tool_caps overrides --mem_caps; a cap
 * below the catalogue's min_mem is a problem), scales, repeats, classes, and the devices named
 * for them (a missing device, or a scratch directory not on it, is a problem).
 */
def studyPlan(String host) {
    def given = givenParams(host)
    // --sizing auto (-profile ssd/hdd): the sizing rule measured on this host first, unless this
    // study's folder holds its record from an earlier session; every other problem is found
    // before the hours of sizing (the space its sizes need, and the folder's plan, are checked once
    // sized). A -stub-run sizes nothing.
    if( given.sizing == 'auto' )
        given.sizing = workflow.stubRun ? 'none' : sizeHere(planOf(given + [replace_results: true], false, true))
    // --estimate (-profile paper): each tool probed briefly on this host first, and the study's
    // duration per class estimated from it (src/biossd/study/plan/estimate.py), logged before any run.
    def plan = planOf(given, params.estimate && !workflow.stubRun)
    if( plan.estimate )
        log.info "biossd: ${plan.estimate.text}"
    // The plan record, the sizing record it took (a twin's --sizing is the first host's file),
    // and this session's row, written into the folder whether or not the report runs.
    studyBegin(plan.record, plan.sizing ? plan.sizing.path.toString() : null)
    // The regime: sizes from a sizing record, or as given (then each tool's input over its cap,
    // which in the paper's regime is several times 1: Fig. 9's 20 GB on 4 GB).
    if( plan.sizing )
        log.info "biossd: sizes from ${plan.sizing.path} (`biossd study size` on ${plan.sizing.host}, ${plan.sizing.created}, ${plan.sizing.run_budget_s} s a run): ${plan.sizing.parameters.join(', ')}"
    else if( plan.input_over_cap )
        log.warn "biossd: no sizing record (--sizing ${params.sizing ?: 'none'}): caps and inputs as given, not by the sizing rule; the paper's regime is not kept unless they happen to keep it. Input over cap per tool: " + plan.input_over_cap.collect { k, v -> "${k} ${v}" }.join(', ')
    if( plan.skipped )
        log.warn "--tools all: skipping ${plan.skipped.size()} recipe-only tools: " + plan.skipped.collect { k, v -> "${k} (${v})" }.join('; ')
    return plan
}

/*
 * The sizing rule measured on this host (`biossd study size`, src/biossd/study/sizing/procedure.py) for the
 * plan's tools, within the study's --budget, on the fast class's scratch. Where its record lives
 * and whether an earlier session's is reused is `biossd study sizing-place`'s rule
 * (src/biossd/study/sizing/record.py, study_place).
 */
def sizeHere(Map plan) {
    def where = ['biossd', 'study', 'sizing-place', '--outdir', params.outdir.toString(), '--work-dir',
                 workflow.workDir.toString(), '--session', workflow.sessionId.toString()]
    if( params.replace_results in [true, 'true'] )
        where << '--replace-results'
    def place = biossdJson(where)
    def record = file(place.record)
    if( place.reuse ) {
        log.info "biossd: --sizing auto: ${record}, measured by an earlier session of this study"
        return record.toString()
    }
    record.parent.mkdirs()
    def scratch = params.scratch_dir ?: workflow.workDir.toString()
    def argv = ['biossd', 'study', 'size', '--tools', plan.tools.join(','), '--budget', params.budget.toString(),
                '--scratch', scratch.toString(), '--out', record.toString()]
    def log_file = file(place.log)
    log.info "biossd: --sizing auto: measuring the sizing rule on this host within the study's budget of ${params.budget} (progress: ${log_file}; an hour or more for every tool)"
    def pb = new ProcessBuilder(argv)
    pb.redirectErrorStream(true)
    pb.redirectOutput(log_file.toFile())
    def code = pb.start().waitFor()
    if( code != 0 )
        error "biossd study size failed (exit ${code}); nothing was run. Its log: ${log_file}:\n" + log_file.readLines().takeRight(5).join("\n")
    return record.toString()
}

// `biossd study plan` of the given params; stops the study on any problem.
def planOf(Map given, boolean estimate = false, boolean beforeSizing = false) {
    def extra = beforeSizing ? ['--before-sizing'] : []
    if( estimate )
        extra += ['--estimate', '--scratch', (params.scratch_dir ?: workflow.workDir).toString()]
    if( workflow.stubRun )
        extra << '--stub'
    if( workflow.resume )
        extra << '--resumed'
    return biossdPlan('study', given, extra)
}

// A configuration on every class: the runs of a speedup.
def baselineKey(meta) {
    return [meta.tool, meta.mem, meta.scale].join('/')
}

// Profiled tasks (metas of the plan) joined to what each needs, in the plan's order: its class's
// scratch and device record, its prepared input and its tool's version.
def withInputs(ch_meta, ch_classes, ch_prepared, ch_versions) {
    return ch_meta
        .map { meta -> [meta.storage, meta] }
        .combine(ch_classes, by: 0)
        .map { storage, meta, scratch, device -> [[meta.tool, meta.input], meta, scratch, device] }
        .combine(ch_prepared.map { tool, id, dir, nbytes -> [[tool, id], dir, nbytes] }, by: 0)
        .map { key, meta, scratch, device, dir, nbytes -> [meta.tool, meta + [input_bytes: nbytes as long], dir, scratch, device] }
        .combine(ch_versions, by: 0)
        .map { tool, meta, dir, scratch, device, version, image, biossd -> [meta, dir, scratch, device, version, image, biossd] }
        .toSortedList { a, b -> a[0].order <=> b[0].order }
        .flatMap { it }
}

workflow BIOSSD {
    main:
    def host   = params.host ?: java.net.InetAddress.localHost.hostName
    def plan   = studyPlan(host)
    def tools  = plan.tools
    def classes = plan.classes
    def scales = plan.scales
    log.info "biossd: ${plan.n_runs} profiled runs: ${tools.size()} tools x caps ${plan.caps.values().flatten().unique().join('/')} x scales ${scales.join('/')} x ${plan.repeats} repeats (scaling runs: ${plan.scaling_repeats}) x ${classes.join('/')}" + (plan.probes ? "; ${plan.probes.size()} cachegrind probes on ${classes[0]}" : '') + (plan.chain_runs ? "; ${plan.chain_runs.size()} chained pipelines x ${classes.join('/')}" : '')

    // Every input the runs read, from the plan: one per (kind, source, scale) at its kind's size
    // (--input_sizes, else --input_size), and the probes' reduced ones; shared by every run of it.
    // Its source is synthetic, or a data set of the paper's prepared by its recipe (--inputs).
    ch_inputs = Channel
        .fromList(plan.inputs)
        .map { i -> [[kind: i.kind, scale: i.scale, id: i.id, source: i.source, data: i.data, manifests: i.manifests],
                     i.size, params.seed] }
    STUDY_INPUT(ch_inputs)
    ch_input_dirs = STUDY_INPUT.out.input.map { meta, dir -> [meta.id, dir] }

    // Each tool's version, asked once (every run of the tool takes it, and with it its hash).
    TOOL_VERSION(Channel.fromList(plan.tasks.collect { it.tool }.unique()))
    // Each (tool, input) prepared once — indexes, dictionaries — for every run of it to copy.
    PREPARE(Channel.fromList((plan.tasks + plan.floor_tasks).collect { [it.input, it.tool] }.unique())
                .combine(ch_input_dirs, by: 0)
                .map { id, tool, dir -> [tool, id, dir] })

    // Each storage class resolved to its scratch directory ('' = the task directory). Every
    // class's device is measured first, once nothing else writes: after the inputs are written
    // and prepared (fio beside a writing task would measure the load, not the device).
    ch_quiet = STUDY_INPUT.out.input.mix(PREPARE.out.prepared, TOOL_VERSION.out.version).collect().map { true }.ifEmpty(true)
    STORAGE_UP(classes.join(','), [emulate_size: plan.emulate_size, data_memory: plan.data_memory])
    CHARACTERIZE(STORAGE_UP.out.json.combine(ch_quiet).map { json, quiet -> json }, host)
    ch_classes = STORAGE_UP.out.json
        .flatMap { f -> parseJson(f.text).collect { name, info -> [name, info.scratch ?: ''] } }
        .join(CHARACTERIZE.out.records.flatten().map { f -> [f.baseName, f] }, failOnMismatch: true)

    // With floors measured in this session (a sizing record's study: docs/study.md, "The floor is
    // measured where the study runs"), each tool's warm-up and floor runs come first, uncapped on
    // the first class; CAPS (`biossd study caps`) then gives every task its cap, the tool's floor
    // plus its data memory. Otherwise the plan's caps are as given.
    def planned = [tasks: plan.tasks, firm_tasks: plan.firm_tasks, chain_tasks: plan.chain_tasks]
    if( plan.floor_tasks ) {
        PROFILE_FLOOR(withInputs(Channel.fromList(plan.floor_tasks), ch_classes, PREPARE.out.prepared, TOOL_VERSION.out.version))
        CAPS(PROFILE_FLOOR.out.run_dir.map { meta, dir -> dir }.collect(), planned)
        ch_capped = CAPS.out.tasks.map { f -> parseJson(f.text) }
        ch_tasks = ch_capped.flatMap { it.tasks }.map { m -> new LinkedHashMap(m) }
        ch_firm_planned = ch_capped.map { it.firm_tasks }
        ch_chain_tasks = ch_capped.flatMap { it.chain_tasks }.map { m -> new LinkedHashMap(m) }
        ch_floor_runs = PROFILE_FLOOR.out.run_dir
        ch_caps_versions = PROFILE_FLOOR.out.versions.mix(CAPS.out.versions)
    } else {
        ch_tasks = Channel.fromList(plan.tasks)
        ch_firm_planned = Channel.value(plan.firm_tasks)
        ch_chain_tasks = Channel.fromList(plan.chain_tasks)
        ch_floor_runs = Channel.empty()
        ch_caps_versions = Channel.empty()
    }

    // Every profiled task of the plan, with its whole meta (labels, cap in bytes, input, publish
    // path), in the plan's order: the classes side by side, so that a drift of the host's load
    // falls on both alike. Each is joined to its class's scratch and device record, its prepared
    // input and its tool's version.
    ch_first = withInputs(ch_tasks.filter { meta -> meta.rep == 1 }, ch_classes, PREPARE.out.prepared,
                          TOOL_VERSION.out.version)

    // The first repeat of every configuration, then the others, as `biossd study repeats` decides
    // (src/biossd/study/repeats.py: a configuration whose first repeat reached the time limit is
    // not repeated, and its repeats are listed in pipeline_info/repeats_not_run.tsv).
    PROFILE(ch_first)
    REPEATS(PROFILE.out.run_dir.filter { meta, dir -> !meta.probe }.map { meta, dir -> dir }.collect().ifEmpty([]),
            ch_tasks.filter { meta -> meta.rep != 1 }.toList())
    ch_repeats = withInputs(REPEATS.out.tasks.flatMap { f -> parseJson(f.text) }
                                .map { m -> new LinkedHashMap(m) },
                            ch_classes, PREPARE.out.prepared, TOOL_VERSION.out.version)
    PROFILE_REPEAT(ch_repeats)
    ch_not_run = REPEATS.out.not_run
    // A baseline configuration whose speedup's interval straddles a group's bound (1.2x or 2x)
    // after its repeats runs to --firm_repeats in all (src/biossd/analysis/speedup.py, unfirm):
    // FIRM_UP picks those from the plan's extra repeats once the baseline runs are done.
    ch_first_profiled = PROFILE.out.run_dir.mix(PROFILE_REPEAT.out.run_dir)
    if( plan.firm_tasks && classes.size() >= 2 ) {
        def baselines = plan.firm_tasks.collect { baselineKey(it) }.unique()
        FIRM_UP(ch_first_profiled.filter { meta, dir -> !meta.probe && baselineKey(meta) in baselines }.map { meta, dir -> dir }.collect(),
                ch_firm_planned, [classes[0], classes[1]])
        ch_firm = withInputs(FIRM_UP.out.tasks.flatMap { f -> parseJson(f.text) }
                                 .map { m -> new LinkedHashMap(m) },
                             ch_classes, PREPARE.out.prepared, TOOL_VERSION.out.version)
        PROFILE_FIRM(ch_firm)
        ch_profiled = ch_first_profiled.mix(PROFILE_FIRM.out.run_dir, ch_floor_runs)
        ch_firm_versions = FIRM_UP.out.versions.mix(PROFILE_FIRM.out.versions)
    } else {
        ch_profiled = ch_first_profiled.mix(ch_floor_runs)
        ch_firm_versions = Channel.empty()
    }

    // Fig. 3: the chained pipelines on every class, once every profiled run is done (a chain's
    // staging — copies, indexes — must not load the host under a measured run).
    ch_runs_done = ch_profiled.collect().map { true }.ifEmpty(true)
    ch_chains = ch_chain_tasks
        .map { meta -> [meta.storage, meta] }
        .combine(ch_classes, by: 0)
        .map { storage, meta, scratch, device -> [meta.input, meta, scratch, device] }
        .combine(ch_input_dirs, by: 0)
        .combine(ch_runs_done)
        .map { id, meta, scratch, device, dir, done -> [meta, dir, scratch, device] }
    CHAIN(ch_chains)
    // Each step's directory with its layout path, meta.publish/<NN-tool>.
    ch_step_dirs = CHAIN.out.step_dirs
        .flatMap { meta, dirs -> (dirs instanceof List ? dirs : [dirs]).collect { d -> ["${meta.publish}/${d.name}".toString(), d] } }

    // Timed runs make the features table; the report also reads the probes (Fig. 10) and the
    // chained pipelines' steps (Fig. 3).
    ch_run_dirs = ch_profiled.filter { meta, dir -> !meta.probe }.map { meta, dir -> dir }.collect()
    FEATURES(ch_run_dirs)
    if( !params.skip_report )
        REPORT(FEATURES.out.table,
               ch_profiled.map { meta, dir -> [meta.publish, dir] }.mix(ch_step_dirs)
                   .toSortedList { a, b -> a[0] <=> b[0] }
                   .map { pairs -> [pairs.collect { it[0] }, pairs.collect { it[1] }] },
               CHARACTERIZE.out.records.collect(), CHARACTERIZE.out.host, ch_not_run,
               file("${params.outdir}/pipeline_info/sessions.tsv", checkIfExists: true),
               file("${params.outdir}/pipeline_info/provenance.json", checkIfExists: true),
               plan.sizing ? file(plan.sizing.path, checkIfExists: true)
                   : params.sizing_record ? file(params.sizing_record, checkIfExists: true) : [],
               host)

    // Provenance: every tool's version as each task measured it (nf-core's software_versions).
    STORAGE_UP.out.versions
        .mix(CHARACTERIZE.out.versions, STUDY_INPUT.out.versions, PROFILE.out.versions, REPEATS.out.versions,
             PROFILE_REPEAT.out.versions,
             ch_firm_versions, ch_caps_versions, CHAIN.out.versions,
             FEATURES.out.versions, params.skip_report ? Channel.empty() : REPORT.out.versions)
        .map { f -> f.text }
        .unique()
        .collectFile(name: 'software_versions.yml', storeDir: "${params.outdir}/pipeline_info", sort: true)

    emit:
    features = FEATURES.out.table
}
