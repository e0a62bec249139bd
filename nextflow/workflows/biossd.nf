/*
 * The study: synthesize inputs, profile every (tool × memory cap × scale × repeat) run, and
 * derive the features table.
 */
include { STORAGE_UP   } from '../modules/local/storage/main'
include { CHARACTERIZE } from '../modules/local/characterize/main'
include { SYNTH_INPUT } from '../modules/local/synth_input/main'
include { PROFILE     } from '../modules/local/profile/main'
include { FEATURES    } from '../modules/local/features/main'
include { REPORT      } from '../modules/local/report/main'

def csvList(value) {
    value.toString().tokenize(',')*.trim().findAll { it }
}

def catalogueEntry(String tool) {
    new groovy.yaml.YamlSlurper().parse(file("${projectDir}/catalogue/${tool}.yaml"))
}

// The smallest memory cap a run may have: below it no tool here starts (the JVM, samtools' buffers).
MIN_CAP_BYTES = 16L << 20
UNITS = [K: 1L << 10, M: 1L << 20, G: 1L << 30, T: 1L << 40]

/*
 * Every problem with the parameters, found before any run starts (an empty list when there is
 * none): unknown tools, unreadable or too small caps, bad scales or repeats, a scratch directory
 * that does not exist, emulated classes that are not run.
 */
def parameterProblems(List tools, List caps, List scaleTexts, List classes) {
    def problems = []
    def catalogue = file("${projectDir}/catalogue")
    def known = catalogue.listFiles()*.name.findAll { it.endsWith('.yaml') }*.replace('.yaml', '').sort()
    tools.findAll { !(it in known) }.each { problems << "Unknown tool '${it}' in --tools; the catalogue has: ${known.join(', ')}" }
    tools.findAll { it in known && (catalogueEntry(it).kind ?: 'tool') != 'tool' }.each {
        problems << "'${it}' in --tools is a pipeline, not a tool"
    }
    caps.each { cap ->
        def m = cap =~ /^(\d+)([KMGT]?)$/
        if( !m.matches() )
            problems << "Memory cap '${cap}' in --mem_caps is not a size like 1G or 512M"
        else if( (m.group(1) as long) * (UNITS[m.group(2)] ?: 1L) < MIN_CAP_BYTES )
            problems << "Memory cap '${cap}' in --mem_caps is below the 16M minimum"
    }
    scaleTexts.findAll { !(it ==~ /^[1-9]\d*$/) }.each { problems << "Scale '${it}' in --scales is not a whole number >= 1" }
    if( !(params.repeats.toString() ==~ /^[1-9]\d*$/) )
        problems << "--repeats ${params.repeats} is not a whole number >= 1"
    if( params.scratch_dir && !file(params.scratch_dir.toString()).isDirectory() )
        problems << "--scratch_dir ${params.scratch_dir} is not an existing directory on the device under study"
    def emulated = params.emulate ? params.emulate.toString().tokenize(',')*.trim()*.tokenize('=')*.getAt(0) : []
    emulated.findAll { !(it in classes) }.each { problems << "--emulate names class '${it}', which is not in --storage_classes" }
    if( !classes )
        problems << "--storage_classes is empty"
    return problems
}

/*
 * The tools of this invocation: --tools a,b,c, or --tools all: every tool entry of the catalogue
 * that can run here (status runnable; in a -stub-run, every tool entry), with the rest listed as
 * skipped.
 */
def selectTools(String spec) {
    if( spec != 'all' )
        return csvList(spec)
    def entries = file("${projectDir}/catalogue").listFiles().findAll { it.name.endsWith('.yaml') }.sort { it.name }
        .collect { f -> new groovy.yaml.YamlSlurper().parse(f) }
        .findAll { e -> (e.kind ?: 'tool') == 'tool' }
    if( workflow.stubRun )
        return entries*.id
    def skipped = entries.findAll { it.status != 'runnable' }
    if( skipped )
        log.warn "--tools all: skipping ${skipped.size()} recipe-only tools: " + skipped.collect { "${it.id} (${it.status_reason})" }.join('; ')
    entries.findAll { it.status == 'runnable' }*.id
}

workflow BIOSSD {
    main:
    def host   = params.host ?: java.net.InetAddress.localHost.hostName
    def tools  = selectTools(params.tools.toString())
    def caps   = csvList(params.mem_caps)
    def classes = csvList(params.storage_classes)
    def problems = parameterProblems(tools, caps, csvList(params.scales), classes)
    if( problems )
        error "The study cannot start; nothing was run:\n  - " + problems.join("\n  - ")
    def scales = csvList(params.scales).collect { it as int }
    def reps   = (1..(params.repeats as int)).toList()
    def kinds  = tools.collectEntries { t -> [t, catalogueEntry(t).input] }

    // Each storage class resolved to its scratch directory ('' = the task directory).
    STORAGE_UP(classes.join(','))
    // Every class's device is measured first; no run starts before that is done.
    CHARACTERIZE(STORAGE_UP.out.json, host)
    ch_classes = STORAGE_UP.out.json
        .flatMap { f -> new groovy.json.JsonSlurper().parse(f).collect { name, info -> [name, info.scratch ?: ''] } }
        .join(CHARACTERIZE.out.records.flatten().map { f -> [f.baseName, f] }, failOnMismatch: true)

    // One synthetic input per (kind, scale), shared by every run that reads it.
    ch_inputs = Channel
        .fromList(kinds.values().toList().unique().collectMany { k -> scales.collect { s -> [k, s] } })
        .map { kind, scale -> [[kind: kind, scale: scale, id: "${kind}_x${scale}"], params.input_size, params.seed] }
    SYNTH_INPUT(ch_inputs)

    ch_runs = Channel
        .fromList(tools.collectMany { t -> caps.collectMany { c -> scales.collectMany { s -> reps.collect { r -> [t, c, s, r] } } } })
        .combine(ch_classes)
        .map { tool, cap, scale, rep, storage, scratch, device ->
            [[kind: kinds[tool], scale: scale], [host: host, storage: storage, tool: tool, mem: cap, scale: scale, rep: rep], scratch, device]
        }
        .combine(SYNTH_INPUT.out.input.map { meta, dir -> [[kind: meta.kind, scale: meta.scale], dir] }, by: 0)
        .map { key, meta, scratch, device, dir -> [meta, dir, scratch, device] }
    PROFILE(ch_runs)

    FEATURES(PROFILE.out.run_dir.map { meta, dir -> dir }.collect())
    if( !params.skip_report )
        REPORT(FEATURES.out.table)

    // Provenance: every tool's version as each task measured it (nf-core's software_versions).
    STORAGE_UP.out.versions
        .mix(CHARACTERIZE.out.versions, SYNTH_INPUT.out.versions, PROFILE.out.versions, FEATURES.out.versions)
        .map { f -> f.text }
        .unique()
        .collectFile(name: 'software_versions.yml', storeDir: "${params.outdir}/pipeline_info", sort: true)

    emit:
    features = FEATURES.out.table
}
