/*
 * CHAIN — one chained pipeline (Lee, Min and Yoon 2015, Fig. 3) on one storage class, in one process
 * (`biossd chain run`, src/biossd/measure/chainrun.py): its steps run one after another in one
 * marked scratch on the class's device, each step's output the next step's input, each step
 * staged under the host lock and profiled under its tool's cap, with the same swap, time limit
 * and device record as PROFILE's runs; the scratch is removed however the chain ends. A step that
 * does not end ok ends the chain: the steps after it are not run (their inputs do not exist).
 * Published to meta.publish/<NN-tool>/, OUTDIR/<host>-<storage>/chains/<pipeline>/<rep>/<NN-tool>/ (the study
 * plan computes it: src/biossd/study/layout.py; conf/modules.config publishes it).
 */
include { shellQuote } from '../../../lib/shell'

process CHAIN {
    tag "${meta.pipeline} ${meta.storage} #${meta.rep}"
    label 'profiled'
    maxForks workflow.stubRun ? 64 : 1

    input:
    tuple val(meta), path(input_dir), val(scratch_root), path(device_record, stageAs: 'device.json')

    output:
    tuple val(meta), path('steps/*'), emit: step_dirs
    path 'versions.yml'             , emit: versions

    script:
    def q       = { value -> shellQuote(value) }
    def scratch = scratch_root ? q("${scratch_root}/biossd-${task.hash ?: task.index}") : '"$PWD/scratch"'
    def args    = task.ext.args ?: ''
    def engine  = task.ext.engine ? "--container ${q(task.ext.engine)}" : ''
    def labels  = meta.labels.collect { k, v -> "--label ${q("${k}=${v}")}" }.join(' ')
    // Each step's cap and its tool's memory settings under the sizing rule, from the study plan.
    def steps   = groovy.json.JsonOutput.toJson(meta.steps.collect { st -> [index: st.index, name: st.name, tool: st.tool, mem: st.mem, settings: st.settings ?: [:]] })
    """
    printf '%s\\n' ${q(steps)} > steps.json
    biossd chain run ${q(meta.pipeline)} --input ${q(input_dir)} --scratch ${scratch} --out steps \\
        --steps @steps.json --hold-host-lock ${engine} ${args} ${labels} --device-record device.json \\
        --versions tool_versions.txt

    echo '"${task.process}":' > versions.yml
    echo "    biossd: \$(biossd --version | sed 's/biossd //')" >> versions.yml
    sed 's/^/    /' tool_versions.txt >> versions.yml
    """

    stub:
    def first = meta.steps[0].name
    """
    mkdir -p steps/${first}
    echo '"${task.process}": {${meta.pipeline}: stub}' > versions.yml
    """
}
