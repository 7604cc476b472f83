# Bash completion for sqlock. Subcommands and options are read from the program's own --help
# (once per shell and subcommand), so they never disagree with the installed version.
# Installed as share/bash-completion/completions/sqlock; to try it: source this file.
# zsh has a completion of its own: _sqlock, next to this file.

declare -gA _sqlock_help_cache

# The --help text of `sqlock $1` ("" = the top level), cached.
_sqlock_help() {
  local key=${1:-.}
  if [[ -z ${_sqlock_help_cache[$key]+set} ]]; then
    # shellcheck disable=SC2086
    _sqlock_help_cache[$key]=$("${_sqlock_cmd:-sqlock}" $1 --help 2>/dev/null)
  fi
  printf '%s\n' "${_sqlock_help_cache[$key]}"
}

_sqlock() {
  local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD - 1]}
  local _sqlock_cmd=${COMP_WORDS[0]} sub="" i
  COMPREPLY=()
  for ((i = 1; i < COMP_CWORD; i++)); do
    if [[ ${COMP_WORDS[i]} == -- ]]; then
      # After `--`: the command to run, then its arguments (files).
      if ((COMP_CWORD == i + 1)); then
        mapfile -t COMPREPLY < <(compgen -c -- "$cur" | sort -u)
      else
        mapfile -t COMPREPLY < <(compgen -f -- "$cur")
      fi
      return
    fi
    [[ -z $sub && ${COMP_WORDS[i]} != -* ]] && sub=${COMP_WORDS[i]}
  done
  if [[ -z $sub ]]; then
    local subs
    subs=$(_sqlock_help "" | awk '/^Subcommands:/{on=1; next} on && /^  [a-z]/{print $1} on && /^$/{on=0}')
    if [[ $cur == -* ]]; then
      mapfile -t COMPREPLY < <(compgen -W "--help --version" -- "$cur")
    else
      mapfile -t COMPREPLY < <(compgen -W "$subs" -- "$cur")
    fi
    return
  fi
  case $prev in
    -c | --command) mapfile -t COMPREPLY < <(compgen -c -- "$cur"); return ;;
    --mode) mapfile -t COMPREPLY < <(compgen -W "pessimistic optimistic advisory" -- "$cur"); return ;;
  esac
  if [[ $cur == -* ]]; then
    local opts
    opts=$(_sqlock_help "$sub" | grep -oE '(^ +|,)--?[A-Za-z][-A-Za-z]*' | tr -d ' ,' | sort -u)
    mapfile -t COMPREPLY < <(compgen -W "$opts" -- "$cur")
  fi
}

complete -F _sqlock sqlock
