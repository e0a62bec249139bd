/*
 * CHAIN — one chained pipeline (seed 000 Fig. 3) on one storage class: its steps run one after
 * another in one scratch on the class's device, each step's output the next step's input
 * (`biossd chain stage`, src/biossd/study/chain.py), each step profiled by `biossd profile` under its
 * tool's cap, with the same swap, time limit and device record as PROFILE's runs. A step that
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
    // One line per step: index, step name, tool, cap and its tool's memory settings under the
    // sizing rule (NAME=VALUE,...; '-' for none), from the study plan.
    def steps   = meta.steps.collect { s -> "${s.index} ${s.name} ${s.tool} ${s.mem} " + ((s.settings ?: [:]).collect { k, v -> "${k}=${v}" }.join(',') ?: '-') }.join('\n')
    """
    scratch=${scratch}
    if [ -e "\$scratch" ]; then
        [ -f "\$scratch/.biossd-scratch" ] || { echo "\$scratch exists and is not a biossd scratch directory; not touching it" >&2; exit 1; }
        rm -rf "\$scratch"
    fi
    mkdir -p "\$scratch" steps && : > "\$scratch/.biossd-scratch"
    trap '[ -f "\$scratch/.biossd-scratch" ] && rm -rf "\$scratch"' EXIT
    workdir=\$PWD
    echo '"${task.process}":' > versions.yml
    echo "    biossd: \$(biossd --version | sed 's/biossd //')" >> versions.yml
    while read -r index name tool mem settings; do
        set_args=()
        set_labels=()
        if [ "\$settings" != - ]; then
            IFS=, read -ra pairs <<< "\$settings"
            for pair in "\${pairs[@]}"; do set_args+=(--set "\$pair"); set_labels+=(--label "setting.\$pair"); done
        fi
        version=\$(biossd catalogue version ${engine} "\$tool")
        echo "    \$tool: \$version" >> versions.yml
        # In the foreground (see PROFILE): the EXIT trap then never races a copy into scratch.
        biossd chain stage --print0 --existing-scratch --hold-host-lock --mem "\$mem" "\${set_args[@]}" ${engine} ${q(meta.pipeline)} \\
            --step "\$index" --input ${q(input_dir)} --scratch "\$scratch" > .tool_argv
        mapfile -d '' -t tool_argv < .tool_argv
        [ \${#tool_argv[@]} -gt 0 ] || { echo "biossd chain stage ${meta.pipeline} step \$name gave no command" >&2; exit 1; }
        cd "\$scratch"
        biossd profile --mem "\$mem" --out "\$workdir/steps/\$name" ${args} \\
            ${labels} "\${set_labels[@]}" --label "tool=\$tool" --label "mem=\$mem" --label "step=\$name" --label "tool_version=\$version" \\
            --label "scratch=\$scratch" --tool-version "\$version" --device-record "\$workdir/device.json" \\
            -- "\${tool_argv[@]}"
        cd "\$workdir"
        outcome=\$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["outcome"])' "steps/\$name/run.json")
        if [ "\$outcome" != ok ]; then
            echo "chain ${meta.pipeline}: step \$name ended \$outcome; the steps after it have no input and are not run" >&2
            break
        fi
    done <<'END_STEPS'
${steps}
END_STEPS
    """

    stub:
    def first = meta.steps[0].name
    """
    mkdir -p steps/${first}
    echo '"${task.process}": {${meta.pipeline}: stub}' > versions.yml
    """
}
