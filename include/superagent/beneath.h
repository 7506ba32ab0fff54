// Opening files beneath a root directory without ever leaving it (issue 19, part 5).
//
// The builtin worker's file tools (root: the Ticket's worktree), the repository's AGENTS.md and
// the team's prompt files (root: prompts.team_dir) name files by paths that a model or a
// repository chose. A path must resolve beneath its root: `..` that climbs above the root, an
// absolute path, and a symbolic link whose target is absolute or climbs out are refused, at
// every component, by the kernel's resolver — `openat2(2)` with RESOLVE_BENEATH |
// RESOLVE_NO_MAGICLINKS (Linux >= 5.6) — so a link swapped in between a check and the open cannot
// win a race. Where openat2 is missing (ENOSYS: older kernels, some seccomp filters) the same
// rules are applied by a walk that opens one component at a time with O_NOFOLLOW and expands
// each symbolic link itself. Links that stay beneath the root keep working.
//
// Paths are bytes: non-ASCII names (Chinese, emoji) are ordinary names.
#pragma once

#include <sys/types.h>

#include <string>
#include <string_view>

#include "superagent/status.h"

namespace superagent::beneath {

// kAuto: openat2, the walk when the kernel lacks it. kWalk: always the walk (tests prove the
// fallback applies the same rules on a kernel that has openat2).
enum class Resolver { kAuto, kWalk };

// Opens `rel` beneath the directory `root` with open(2) `flags` (O_CLOEXEC is added) and `mode`
// (used with O_CREAT). Returns the descriptor; the caller closes it.
// Errors: InvalidArgument when `rel` is empty or absolute, climbs above `root`, or follows a
// symbolic link out of it (the message says "leads outside"), or when the last component is a
// link and `flags` has O_NOFOLLOW; NotFound when a component does not exist; IoError otherwise
// (including a missing or unreadable `root`).
Result<int> Open(const std::string& root, std::string_view rel, int flags, mode_t mode = 0,
                 Resolver resolver = Resolver::kAuto);

// The whole content of the regular file `rel` beneath `root` (links inside the root followed).
// InvalidArgument also for something that is not a regular file (a FIFO would block forever).
Result<std::string> ReadFile(const std::string& root, std::string_view rel, Resolver resolver = Resolver::kAuto);

// Replaces the content of `rel` beneath `root` with `content`, creating the file (mode 0666 less
// the umask) and its missing parent directories beneath `root`. The last component is opened
// with O_NOFOLLOW: a write never goes through a symbolic link — not even one that points inside —
// so a dangling link can never create a file elsewhere; the error names the link's target, so the
// caller can write there instead.
Status WriteFile(const std::string& root, std::string_view rel, std::string_view content,
                 Resolver resolver = Resolver::kAuto);

}  // namespace superagent::beneath
