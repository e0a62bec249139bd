/*
 * PROFILE — one profiled tool run: the catalogue renders the tool's command, `biossd profile`
 * runs it under the memory cap with caches dropped, and the run directory is published to
 * meta.publish, OUTDIR/<host>-<storage>/runs/<tool>/<mem>/<scale>/<rep>/ (the study plan
 * computes it, src/biossd/study/layout.py; conf/modules.config publishes it). The meta is the
 * plan's task (`biossd study plan`): labels, cap in bytes, input, publish path.
 * `biossd catalogue stage` copies the tool's input, prepared once for the tool (PREPARE: indexes
 * etc., unprofiled), into scratch on the storage class's device, and the tool runs there, so its
 * reads and writes hit the device under study and that device is the one traced (plus the run's
 * swap area, when --swap is set). The tool's version comes from TOOL_VERSION, asked once per
 * tool: with the biossd version it is part of the task's hash, as the prepared input is.
 */
process PROFILE {
    tag "${meta.tool} ${meta.storage} ${meta.mem} x${meta.scale} #${meta.rep}${meta.probe ? ' ' + meta.probe : ''}"
    label 'profiled'
    // One profiled run at a time on a host, like the paper; a -stub-run only checks the
    // workflow's shape, so its stub tasks may run side by side.
    maxForks workflow.stubRun ? 64 : 1

    input:
    tuple val(meta), path(input_dir, stageAs: 'input'), val(scratch_root), path(device_record, stageAs: 'device.json'), val(version), val(image_ref), val(biossd_version)

    output:
    tuple val(meta), path('run'), emit: run_dir
    path 'versions.yml'         , emit: versions

    script:
    def q       = { value -> "'" + value.toString().replace("'", "'\\''") + "'" }
    def scratch = scratch_root ? q("${scratch_root}/biossd-${task.hash ?: task.index}") : '"$PWD/scratch"'
    def labels  = meta.labels.collect { k, v -> "--label ${q("${k}=${v}")}" }.join(' ')
    // A cachegrind probe (Fig. 10 without a PMU) runs the tool under valgrind's cache simulation.
    def args    = [task.ext.args ?: '', meta.probe == 'cachegrind' ? '--cachegrind' : ''].findAll().join(' ')
    // In a container (-profile ...,charliecloud|apptainer|docker) the tool sees scratch at /mnt/0.
    def engine_name = task.ext.engine ?: ''
    def engine  = engine_name ? "--container ${q(engine_name)}" : ''
    def engineLabel = engine_name ? "--label ${q("container_engine=${engine_name}")}" : ''
    def tool    = q(meta.tool)
    def mem     = q(meta.mem)
    // A probe is not capped: valgrind's own memory would push the tool over its cap (the tool's
    // memory options still follow meta.mem, as in its timed runs).
    def cap     = q(meta.probe ? 'none' : meta.mem)
    // The tool's own memory settings under the sizing rule (src/biossd/study/sizing.py), from the plan.
    def sets    = (meta.settings ?: [:]).collect { k, v -> "--set ${q("${k}=${v}")}" }.join(' ')
    def setLabels = (meta.settings ?: [:]).collect { k, v -> "--label ${q("setting.${k}=${v}")}" }.join(' ')
    """
    # The run's scratch carries biossd's mark; only a marked one is ever removed.
    scratch=${scratch}
    if [ -e "\$scratch" ]; then
        [ -f "\$scratch/.biossd-scratch" ] || { echo "\$scratch exists and is not a biossd scratch directory; not touching it" >&2; exit 1; }
        rm -rf "\$scratch"
    fi
    mkdir -p "\$scratch" && : > "\$scratch/.biossd-scratch"
    trap '[ -f "\$scratch/.biossd-scratch" ] && rm -rf "\$scratch"' EXIT
    version=${q(version)}
    image=()
    image_ref=${q(image_ref)}
    if [ -n ${q(engine_name)} ]; then
        image=(--image "\$image_ref")
    fi
    # The prepared input (its files and indexes) is copied into scratch. In the
    # foreground, not a process substitution: on a signal bash runs the EXIT trap only once the
    # staging has ended, so the trap's removal of scratch cannot race a copy still writing into it
    # (on an emulated disk already taken down, into its bare mount point).
    biossd catalogue stage --print0 --existing-scratch --hold-host-lock --mem ${mem} ${sets} ${engine} ${tool} \\
        --input input --scratch "\$scratch" > .tool_argv
    mapfile -d '' -t tool_argv < .tool_argv
    [ \${#tool_argv[@]} -gt 0 ] || { echo "biossd catalogue stage ${tool} gave no command" >&2; exit 1; }
    workdir=\$PWD
    cd "\$scratch"
    biossd profile --mem ${cap} --out "\$workdir/run" ${args} \\
        ${labels} ${setLabels} ${engineLabel} --label "tool_version=\$version" --label "scratch=\$scratch" --label ${q("input_bytes=${meta.input_bytes}")} --tool-version "\$version" \\
        --device-record "\$workdir/device.json" "\${image[@]}" \\
        -- "\${tool_argv[@]}"
    cd "\$workdir"
    # Aligners (Fig. 1(b)): the output scored against the input's truth, while scratch still holds it.
    biossd quality ${tool} --scratch "\$scratch" --run run > /dev/null

    cat <<-END_VERSIONS > versions.yml
    "${task.process}":
        biossd: ${biossd_version}
        ${meta.tool}: \$version
        ${meta.tool}_image: "\$image_ref"
    END_VERSIONS
    """

    stub:
    """
    mkdir run
    echo '"${task.process}": {${meta.tool}: stub}' > versions.yml
    """
}
