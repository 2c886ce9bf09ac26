# dist/heaptap.bash - bash completion for heaptap
# SPDX-License-Identifier: MIT
#
# Installed as <datadir>/bash-completion/completions/heaptap, which
# bash-completion loads the first time a "heaptap" word is completed;
# without bash-completion, source this file (e.g. from ~/.bashrc).
#
# The commands and each command's options are read from the heaptap being
# completed (heaptap --help, heaptap COMMAND --help), so they are those of
# that version; an option followed by a word in its help line takes a value.
# Positional arguments:
#   attach PID, top PID   processes the user may trace (own ones, all for
#                         root), without kernel threads and zombies
#   detach PID            processes with a heaptap attach session (its
#                         control socket, in /proc/net/unix) or with heaptap's
#                         library mapped (a library left tracking)
#   ctl PID sample off    processes with a heaptap attach session
#   report FILE           recordings (*.htap) and directories
#   record PROGRAM ARGS   a command, then that command's own completion when
#                         bash-completion is loaded, else file names

# _heaptap_run HEAPTAP ARGS...: heaptap's help text, or nothing
_heaptap_run()
{
	local ht=$1
	shift
	case $ht in "~/"*) ht=$HOME/${ht#"~/"} ;; esac
	LC_ALL=C command "$ht" "$@" </dev/null 2>/dev/null
}

# _heaptap_commands HEAPTAP: the command names, one per line
_heaptap_commands()
{
	local line in=0 n=0
	while IFS= read -r line; do
		if [[ $line == commands: ]]; then
			in=1
		elif ((in)); then
			[[ $line =~ ^\ +([a-z][a-z0-9-]*)\  ]] || break
			printf '%s\n' "${BASH_REMATCH[1]}"
			((n++))
		fi
	done < <(_heaptap_run "$1" --help)
	((n)) || printf '%s\n' record attach detach ctl report
}

# _heaptap_options HEAPTAP COMMAND: fill _heaptap_opts (every option) and
# _heaptap_optarg (option -> the name of its value, e.g. FILE) from the
# "  -o, --output FILE  description" lines of heaptap COMMAND --help.
_heaptap_options()
{
	local line spec w
	local -a words pending
	_heaptap_opts=()
	_heaptap_optarg=()
	while IFS= read -r line; do
		[[ $line =~ ^\ +(-.*)$ ]] || continue
		spec=${BASH_REMATCH[1]}
		spec=${spec%%  *} # the description starts after two spaces
		read -ra words <<<"${spec//,/ }"
		pending=()
		for w in "${words[@]}"; do
			if [[ $w == -* ]]; then
				_heaptap_opts+=("$w")
				pending+=("$w")
			else
				for spec in "${pending[@]}"; do
					_heaptap_optarg[$spec]=$w
				done
				pending=()
			fi
		done
	done < <(_heaptap_run "$1" "$2" --help)
}

# _heaptap_pids MODE: PIDs, one per line. MODE all: processes we may trace;
# session: with a heaptap attach session; held: session or library mapped.
_heaptap_pids()
{
	local d p path f
	local -A seen=()
	if [[ $1 == all ]]; then
		for d in /proc/[0-9]*; do
			p=${d#/proc/}
			# exe resolves only for a process we may ptrace (read access),
			# never for kernel threads and zombies
			[[ -e $d/exe ]] || continue
			printf '%s\n' "$p"
		done
		return
	fi
	# abstract socket "@heaptap-session/PID/STARTTIME" (cli/detach_ctl.c)
	while read -r _ _ _ _ _ _ _ path; do
		[[ $path == @heaptap-session/* ]] || continue
		p=${path#@heaptap-session/}
		p=${p%%/*}
		[[ $p =~ ^[0-9]+$ && -d /proc/$p ]] && seen[$p]=1
	done 2>/dev/null </proc/net/unix
	if [[ $1 == held ]]; then
		# bounded: reading a process's maps waits for its mmap lock
		while IFS= read -r f; do
			p=${f#/proc/}
			seen[${p%%/*}]=1
		done < <(timeout 2 grep -ls 'libheaptap_inject\.so' /proc/[0-9]*/maps 2>/dev/null)
	fi
	for p in "${!seen[@]}"; do
		printf '%s\n' "$p"
	done
}

# _heaptap_files [PATTERN]: file names (matching PATTERN, e.g. *.htap) and directories
_heaptap_files()
{
	compopt -o filenames 2>/dev/null
	if [[ -n ${1:-} ]]; then
		mapfile -t COMPREPLY < <(compgen -f -X "!$1" -- "$cur"; compgen -d -- "$cur")
	else
		mapfile -t COMPREPLY < <(compgen -f -- "$cur")
	fi
}

# _heaptap_value OPTION VALUENAME: complete the value of an option
_heaptap_value()
{
	case $2 in
	FILE | OUT) _heaptap_files ;;
	DIR)
		compopt -o filenames 2>/dev/null
		mapfile -t COMPREPLY < <(compgen -d -- "$cur")
		;;
	FMT)
		mapfile -t COMPREPLY < <(compgen -W 'text json html pprof heaptrack collapsed massif' -- "$cur")
		;;
	COST) mapfile -t COMPREPLY < <(compgen -W 'calls bytes peak leaked temporary' -- "$cur") ;;
	[a-z]*) mapfile -t COMPREPLY < <(compgen -W "$2" -- "$cur") ;; # "--format pprof"
	*) COMPREPLY=() ;; # a number, a size, seconds
	esac
}

_heaptap()
{
	local cur=${COMP_WORDS[COMP_CWORD]} prev= ht=${COMP_WORDS[0]} cmd i w npos=0 prog=0 ddash=0
	local -a _heaptap_opts
	local -A _heaptap_optarg
	COMPREPLY=()
	((COMP_CWORD > 0)) && prev=${COMP_WORDS[COMP_CWORD - 1]}
	# --opt=value: bash splits it at '=' (COMP_WORDBREAKS)
	if [[ $cur == = ]]; then
		cur=
	elif [[ $prev == = ]] && ((COMP_CWORD > 1)); then
		prev=${COMP_WORDS[COMP_CWORD - 2]}
	fi

	if ((COMP_CWORD == 1)); then
		if [[ $cur == -* ]]; then
			mapfile -t COMPREPLY < <(compgen -W '--help --version' -- "$cur")
		else
			mapfile -t COMPREPLY < <(compgen -W "$(_heaptap_commands "$ht") help" -- "$cur")
		fi
		return 0
	fi
	cmd=${COMP_WORDS[1]}
	case $cmd in
	-*) return 0 ;;
	help)
		((COMP_CWORD == 2)) && mapfile -t COMPREPLY < <(compgen -W "$(_heaptap_commands "$ht")" -- "$cur")
		return 0
		;;
	esac
	_heaptap_options "$ht" "$cmd"

	# the words before the cursor: options, their values, positional arguments
	for ((i = 2; i < COMP_CWORD; i++)); do
		w=${COMP_WORDS[i]}
		if ((ddash)) || [[ $w != -* ]]; then
			[[ $w == = ]] && continue
			((i > 2)) && [[ ${COMP_WORDS[i - 1]} == = ]] && continue
			((npos++ == 0)) && prog=$i
			[[ $cmd == record ]] && break # the program's own arguments follow
		elif [[ $w == -- ]]; then
			ddash=1
		elif [[ -n ${_heaptap_optarg[$w]:-} && ${COMP_WORDS[i + 1]:-} != = ]]; then
			((i++)) # its value
		fi
	done

	if [[ $cmd == record ]] && ((npos)); then
		# the recorded program's words: its own completion
		if declare -F _command_offset >/dev/null; then
			_command_offset "$prog"
		else
			compopt -o default 2>/dev/null
			COMPREPLY=()
		fi
		return 0
	fi
	if ((!ddash)) && [[ -n $prev && -n ${_heaptap_optarg[$prev]:-} ]]; then
		_heaptap_value "$prev" "${_heaptap_optarg[$prev]}"
		return 0
	fi
	if ((!ddash)) && [[ $cur == -* ]]; then
		mapfile -t COMPREPLY < <(compgen -W "${_heaptap_opts[*]}" -- "$cur")
		return 0
	fi
	case $cmd in
	attach | top)
		((npos == 0)) && mapfile -t COMPREPLY < <(compgen -W "$(_heaptap_pids all)" -- "$cur")
		;;
	detach)
		((npos == 0)) && mapfile -t COMPREPLY < <(compgen -W "$(_heaptap_pids held)" -- "$cur")
		;;
	ctl)
		case $npos in
		0) mapfile -t COMPREPLY < <(compgen -W "$(_heaptap_pids session)" -- "$cur") ;;
		1) mapfile -t COMPREPLY < <(compgen -W sample -- "$cur") ;;
		2) mapfile -t COMPREPLY < <(compgen -W off -- "$cur") ;; # or a size: free-form
		esac
		;;
	report) _heaptap_files '*.htap' ;;
	record)
		if [[ $cur == */* ]]; then
			_heaptap_files
		else
			mapfile -t COMPREPLY < <(compgen -c -- "$cur")
		fi
		;;
	*) _heaptap_files ;;
	esac
	return 0
}

complete -F _heaptap heaptap
