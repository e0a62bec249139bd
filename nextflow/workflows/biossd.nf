/*
 * The study: synthesize inputs, profile every (tool × memory cap × scale × repeat) run, and
 * derive the features table.
 */
include { STORAGE_UP   } from '../modules/local/storage/main'
include { CHARACTERIZE } from '../modules/local/characterize/main'
include { SYNTH_INPUT } from '../modules/local/synth_input/main'
include { PROFILE     } from '../modules/local/profile/main'
include { FEATURES    } from '../modules/local/features/main'

def csvList(value) {
    value.toString().tokenize(',')*.trim().findAll { it }
}

def catalogueEntry(String tool) {
    def f = file("${projectDir}/catalogue/${tool}.yaml")
    if( !f.exists() ) {
        def known = file("${projectDir}/catalogue").listFiles()*.name.findAll { it.endsWith('.yaml') }*.replace('.yaml', '').sort()
        error "Unknown tool '${tool}' in --tools; the catalogue has: ${known.join(', ')}"
    }
    new groovy.yaml.YamlSlurper().parse(f)
}

workflow BIOSSD {
    main:
    def host   = params.host ?: java.net.InetAddress.localHost.hostName
    def tools  = csvList(params.tools)
    def caps   = csvList(params.mem_caps)
    def scales = csvList(params.scales).collect { it as int }
    def reps   = (1..(params.repeats as int)).toList()
    def kinds  = tools.collectEntries { t -> [t, catalogueEntry(t).input] }
    def classes = csvList(params.storage_classes)

    // Each storage class resolved to its scratch directory ('' = the task directory).
    STORAGE_UP(classes.join(','))
    // Every class's device is measured first; no run starts before that is done.
    CHARACTERIZE(STORAGE_UP.out.json, host)
    ch_classes = STORAGE_UP.out.json
        .flatMap { f -> new groovy.json.JsonSlurper().parse(f).collect { name, info -> [name, info.scratch ?: ''] } }
        .join(CHARACTERIZE.out.records.flatten().map { f -> [f.baseName, f] }, failOnMismatch: true)

    // One synthetic input per (kind, scale), shared by every run that reads it.
    ch_inputs = Channel
        .fromList(kinds.values().unique().collectMany { k -> scales.collect { s -> [k, s] } })
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

    emit:
    features = FEATURES.out.table
}
