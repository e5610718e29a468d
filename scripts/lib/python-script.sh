# Sourced by the wrappers of the Python test scripts (soak.sh, faults.sh, load.sh): one way to take --release and
# --help, build baton, shopsnap and baton-debug, and run scripts/NAME.py with them.
#
#   run_python_script NAME "$@"    # from the package root; scripts/NAME.sh's opening comment is its help

run_python_script() {
    local name="$1"
    shift
    local configuration=debug
    local arguments=()
    while [ $# -gt 0 ]; do
        case "$1" in
            --release) configuration=release ;;
            -h|--help)
                awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "scripts/$name.sh"
                python3 "scripts/$name.py" --help | sed -n '/^options:/,$p'
                exit 0
                ;;
            *) arguments+=("$1") ;;
        esac
        shift
    done
    command -v python3 >/dev/null || { echo "$name: python3 is needed" >&2; exit 2; }
    swift build -c "$configuration" --product baton >/dev/null
    swift build -c "$configuration" --product shopsnap >/dev/null
    # The load script's synthetic stream apps run it.
    swift build -c "$configuration" --product baton-debug >/dev/null
    exec python3 "scripts/$name.py" --bin ".build/$configuration" "${arguments[@]}"
}
