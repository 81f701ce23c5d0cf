# Sourced by the scripts that build a Java helper with Maven. Maven's own check that nothing
# changed takes seconds of CPU (about 10 s on two busy cores), and the tests start these scripts
# a hundred times, so a script runs Maven only when its build is stale:
#
#   java_build_up_to_date STAMP CLASSPATH_FILE PATH...
#
# succeeds when STAMP (touched after the last successful build) exists, no PATH (the pom and
# the sources) has a file newer than it, and every jar CLASSPATH_FILE lists is still there.
java_build_up_to_date() {
    local stamp="$1" cp_file="$2"
    shift 2
    [ -f "$stamp" ] && [ -s "$cp_file" ] || return 1
    [ -z "$(find "$@" -newer "$stamp" -print -quit 2>/dev/null)" ] || return 1
    local IFS=: jar
    for jar in $(cat "$cp_file"); do
        [ -e "$jar" ] || return 1
    done
}
