/**
 * The completion scripts `sherlock completions bash|zsh|fish` prints. Each
 * is a thin shell function that hands the words before the cursor to
 * `sherlock completions --complete -- WORD…` and offers what it prints: one
 * candidate a line, and a last line `:files` when file names fit too. The
 * grammar and the names live in sherlock, so the scripts never go stale.
 *
 * @module
 */

/** The shells sherlock writes completion scripts for. */
export type Shell = "bash" | "zsh" | "fish";

/** The shells, in the order the help names them. */
export const SHELLS: readonly Shell[] = ["bash", "zsh", "fish"];

/** The line that asks the script to offer file names too. */
export const FILES_DIRECTIVE = ":files";

/** The completion script for `shell`. */
export function completionScript(shell: Shell): string {
  return SCRIPTS[shell];
}

const BASH = `# sherlock's completion for bash; in ~/.bashrc:
#   eval "$(sherlock completions bash)"
_sherlock() {
  local cur=\${COMP_WORDS[COMP_CWORD]} line files=0
  COMPREPLY=()
  while IFS= read -r line; do
    if [[ $line == ${FILES_DIRECTIVE} ]]; then
      files=1
    elif [[ -n $line ]]; then
      COMPREPLY+=("$line")
    fi
  done < <(command sherlock completions --complete -- \\
    "\${COMP_WORDS[@]:1:COMP_CWORD}" 2>/dev/null)
  if ((files)); then
    compopt -o filenames 2>/dev/null
    while IFS= read -r line; do
      COMPREPLY+=("$line")
    done < <(compgen -f -- "$cur")
  fi
  return 0
}
complete -F _sherlock sherlock
`;

const ZSH = `# sherlock's completion for zsh; in ~/.zshrc, after compinit:
#   eval "$(sherlock completions zsh)"
_sherlock() {
  local line files=0
  local -a candidates
  for line in "\${(@f)$(command sherlock completions --complete -- \\
    "\${(@)words[2,CURRENT]}" 2>/dev/null)}"; do
    if [[ $line == ${FILES_DIRECTIVE} ]]; then
      files=1
    elif [[ -n $line ]]; then
      candidates+=("$line")
    fi
  done
  (( \${#candidates} )) && compadd -- "\${candidates[@]}"
  (( files )) && _files
  return 0
}
if (( $+functions[compdef] )); then
  compdef _sherlock sherlock
fi
`;

const FISH = `# sherlock's completion for fish:
#   sherlock completions fish > ~/.config/fish/completions/sherlock.fish
function __sherlock_complete
    set -l words (commandline -opc)
    set -e words[1]
    set -l current (commandline -ct)
    set -l files 0
    for line in (command sherlock completions --complete -- $words "$current" 2>/dev/null)
        if test "$line" = "${FILES_DIRECTIVE}"
            set files 1
        else if test -n "$line"
            echo $line
        end
    end
    if test $files = 1
        __fish_complete_path "$current"
    end
end
complete -c sherlock -f -a '(__sherlock_complete)'
`;

const SCRIPTS: Record<Shell, string> = { bash: BASH, zsh: ZSH, fish: FISH };
