/*
 * The four related experiments (--experiment NAME[,NAME] or all): the same
 * storage classes as the study (STORAGE_UP, CHARACTERIZE), then every task of
 * `biossd experiment plan` (src/biossd/experiments/, study/experiments/<id>.yaml at
 * --experiment_size), then each experiment's table and notebook.
 */
include { STORAGE_UP        } from '../modules/local/storage/main'
include { CHARACTERIZE      } from '../modules/local/characterize/main'
include { STUDY_INPUT       } from '../modules/local/study_input/main'
include { EXPERIMENT        } from '../modules/local/experiment/main'
include { EXPERIMENT_REPORT } from '../modules/local/experiment_report/main'
include { biossdPlan; givenParams; studyBegin } from '../subworkflows/local/study_lifecycle'
include { parseJson } from '../lib/json'

workflow EXPERIMENTS {
    main:
    def host = params.host ?: java.net.InetAddress.localHost.hostName
    // The tasks, and every problem with the parameters (the study's own checks — classes, devices,
    // emulations, the schema — and the experiments': names, size).
    def plan = biossdPlan('experiment', givenParams(host))
    log.info "biossd: experiments ${plan.experiments.join(', ')} at size ${plan.size}: ${plan.n_tasks} tasks on ${plan.classes.join('/')}"
    studyBegin(plan.record)

    STORAGE_UP(plan.classes.join(','), [emulate_size: params.emulate_size, data_memory: params.data_memory])
    CHARACTERIZE(STORAGE_UP.out.json, host)
    ch_classes = STORAGE_UP.out.json
        .flatMap { f -> parseJson(f.text).collect { name, info -> [name, info.scratch ?: '', info] } }
        .join(CHARACTERIZE.out.records.flatten().map { f -> [f.baseName, f] }, failOnMismatch: true)

    // Each input once (kind and size), shared by every task that reads it.
    STUDY_INPUT(Channel.fromList(plan.inputs).map { i -> [[kind: i.kind, scale: i.scale, id: i.id], i.size, plan.seed] })

    // Every task in the plan's order: the classes side by side, point by point.
    ch_tasks = Channel
        .fromList(plan.tasks)
        .map { meta -> [meta.storage, meta] }
        .combine(ch_classes, by: 0)
        .map { storage, meta, scratch, info, device -> [meta.input.id, meta, scratch, info, device] }
        .combine(STUDY_INPUT.out.input.map { meta, dir -> [meta.id, dir] }, by: 0)
        .toSortedList { a, b -> a[1].order <=> b[1].order }
        .flatMap { it }
        .map { id, meta, scratch, info, device, dir -> [meta, scratch, info, device, dir] }
    EXPERIMENT(ch_tasks)

    EXPERIMENT_REPORT(
        EXPERIMENT.out.task_dir.map { meta, dir -> [meta.publish, dir] }
            .toSortedList { a, b -> a[0] <=> b[0] }
            .map { pairs -> [pairs.collect { it[0] }, pairs.collect { it[1] }] },
        CHARACTERIZE.out.records.collect(), host, plan.experiments.join(','))

    STORAGE_UP.out.versions
        .mix(CHARACTERIZE.out.versions, STUDY_INPUT.out.versions, EXPERIMENT.out.versions, EXPERIMENT_REPORT.out.versions)
        .map { f -> f.text }
        .unique()
        .collectFile(name: 'software_versions.yml', storeDir: "${params.outdir}/pipeline_info", sort: true)
}
