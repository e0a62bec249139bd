/*
 * PROFILE — one profiled tool run: the catalogue renders the tool's command, `biossd profile`
 * runs it under the memory cap with caches dropped, and the run directory is published to
 * meta.publish, OUTDIR/<host>-<storage>/runs/<tool>/<mem>/<scale>/<rep>/ (the study plan
 * computes it, src/biossd/study/layout.py; conf/modules.config publishes it). The meta is the
 * plan's task (`biossd study plan`): labels, cap in bytes, input, publish path.
 * `biossd catalogue run` copies the tool's input, prepared once for the tool (PREPARE: indexes
 * etc., unprofiled), into scratch on the storage class's device, and the tool runs there, so its
 * reads and writes hit the device under study and that device is the one traced (plus the run's
 * swap area, when --swap is set). The tool's version comes from TOOL_VERSION, asked once per
 * tool: with the biossd version it is part of the task's hash, as the prepared input is.
 */
include { shellQuote } from '../../../lib/shell'

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
    def q       = { value -> shellQuote(value) }
    def scratch = scratch_root ? q("${scratch_root}/biossd-${task.hash ?: task.index}") : 'scratch'
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
    def uncapped = meta.probe ? '--uncapped' : ''
    // The tool's own memory settings under the sizing rule (src/biossd/study/sizing.py), from the plan.
    def sets    = (meta.settings ?: [:]).collect { k, v -> "--set ${q("${k}=${v}")}" }.join(' ')
    def setLabels = (meta.settings ?: [:]).collect { k, v -> "--label ${q("setting.${k}=${v}")}" }.join(' ')
    """
    version=${q(version)}
    image=()
    image_ref=${q(image_ref)}
    if [ -n ${q(engine_name)} ]; then
        image=(--image "\$image_ref")
    fi
    # One process: the scratch made and marked on the class's device, the prepared input (its
    # files and indexes) copied into it under the host lock, the tool profiled there, its output
    # scored while scratch still holds it (aligners, Fig. 1(b)), the scratch removed however the
    # run ends (src/biossd/measure/rundir.py).
    biossd catalogue run ${tool} --input input --scratch ${scratch} --out run --hold-host-lock \
        --mem ${mem} ${uncapped} ${sets} ${engine} ${args} \
        ${labels} ${setLabels} ${engineLabel} --label "tool_version=\$version" --label ${q("input_bytes=${meta.input_bytes}")} --tool-version "\$version" \
        --device-record device.json "\${image[@]}"

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
