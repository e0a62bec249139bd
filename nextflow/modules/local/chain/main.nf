// CHAIN: described in meta.yml beside this file (what it does, the meta keys it reads, its inputs and outputs)
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
    def steps   = groovy.json.JsonOutput.toJson(meta.steps.collect { st -> [index: st.index, name: st.name, tool: st.tool, mem: st.mem, settings: st.settings ?: [:], mem_bytes: st.mem_bytes, floor_labels: st.floor_labels ?: [:]] })
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
