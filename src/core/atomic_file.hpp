// Writing output files all or nothing: every target is checked before any is
// touched, every content goes to a temporary file beside its target, and only
// when all are written are they renamed over their targets; never through a
// symbolic link below the folder the user named.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace attn {

class FolderLock;

// What a commit did to one file.
enum class FileChange {
  created,    // there was no file
  replaced,   // the old file differed (replaced with --force, its mode and owner kept)
  unchanged,  // the old file held the same bytes: not touched at all
};

struct CommittedFile {
  std::string path;
  FileChange change = FileChange::created;
};

struct CommitResult {
  std::vector<CommittedFile> files;        // in the order they were added
  std::vector<std::string> stale_removed;  // temporary files of processes that are gone, removed
};

// The journal of a commit of several files, in the folder it writes: written
// (atomically, synced) once every temporary file is whole, removed once every
// one is renamed. One that is still there names a commit that was interrupted
// during its renames.
inline constexpr const char* kJournalName = ".attn-trace.journal";

// What finish_interrupted_commit did.
struct FinishedCommit {
  std::string journal;               // its path
  long pid = 0;                      // the process that was interrupted
  std::vector<std::string> renamed;  // files it had written, put in place now
  std::size_t in_place = 0;          // files it had renamed itself before it stopped
  std::vector<std::string> lost;     // files it listed with neither a temporary nor a file
};

// Completes the commit a journal in `folder` describes, when there is one and
// its process is gone (or `lock_held`: this process holds the folder's lock,
// so the journal's process cannot be writing): every temporary file it lists
// that is still there is renamed over its target, then the journal is removed.
// It only rolls forward: the journal exists only once every temporary file was
// whole, so the run it names can always be completed, while the files it
// replaced are gone. A journal is read only as a regular file (never through a
// symbolic link); every path in it must be a plain relative path inside
// `folder`, and its folders are walked without following links (an entry
// that meets one is counted as lost); a journal that is not so is refused
// (InputError) before anything is moved.
std::optional<FinishedCommit> finish_interrupted_commit(const std::string& folder, bool lock_held);

// One line for standard error on what finish_interrupted_commit did.
std::string describe(const FinishedCommit& finished);

// Creates `folder` and the folders above it that are missing, outermost
// first, and returns those made. `folder` is a path the user gave: symbolic
// links in it are followed (a dangling one is named as such).
std::vector<std::string> make_folder(const std::string& folder);

// The files of one command, written together into one folder, the root: the
// folder the user named (`mark DIR`, `--out DIR`) or, for one file, the
// folder of the file. The root itself may be a symbolic link (a teacher's
// own ~/classes link), as may any folder above it; below it nothing is
// followed: each folder between the root and a file must be a real folder and
// the file itself must not be a symbolic link, with or without `replace`
// (refused, naming the link and where it leads). Folders below the root are
// opened one by one with O_NOFOLLOW, and the temporary files, their renames
// and new folders are made relative to those open folders (openat, renameat,
// mkdirat), so a link planted after the checks is not followed either.
//
// A temporary file is named `.NAME.tmp-PID` beside its target; one that a
// process which is gone left (a kill -9, a power cut) for a file a commit
// writes is removed.
//
// A batch made with a FolderLock (whose folder is the root) keeps a journal
// (kJournalName) while it renames more than one file. Testing hook: when the
// environment variable ATTN_TRACE_TEST_KILL_AFTER_RENAMES is a number K, such
// a commit kills its own process (SIGKILL) after its K-th rename, as a power
// cut or kill -9 would; the tests use it to leave an interrupted commit.
class FileBatch {
 public:
  // A batch of files in `root` ("" for the current folder), without a journal.
  explicit FileBatch(std::string root);
  // A batch of files in the folder `lock` holds, with a journal.
  explicit FileBatch(const FolderLock& lock);

  // Queues `content` for `path`, a path inside the root (the root joined with
  // a relative path; "." and ".." are resolved as written, and a path that
  // leads out of the root is refused at commit). `source` names where it comes
  // from (a lesson file, a student), for the error when two entries have one
  // target.
  void add(std::string path, std::string content, std::string source = {});

  // Writes every queued file, or none. First checks every target: its folder
  // exists or can be created (a dangling symbolic link is named as such), no
  // symbolic link below the root, the target is not a folder, no two entries
  // (or a file and a folder) share a path, and a file whose content would
  // change is replaced only when `replace` is true (a read-only one is named as
  // read-only; replaced, it keeps its mode, and its owner where this process
  // may set it). Then writes the temporary files and renames them. Any failure
  // before the renames removes the temporaries and the folders it made and
  // throws InputError saying that nothing was changed; `refusal_hint` ends the
  // message that lists the files that would change ("add --force to replace
  // them"). A file that would not change is left untouched.
  CommitResult commit(bool replace, std::string_view refusal_hint);

 private:
  struct Entry {
    std::string path;
    std::string content;
    std::string source;
  };
  std::string root_;
  bool journaled_ = false;
  std::vector<Entry> entries_;
};

// A batch of one file, replaced when it differs (the old file stays whole on
// any failure); the file must not be a symbolic link.
void write_file_atomically(const std::string& path, const std::string& content);

// Reads a whole regular file (read_regular_file of core/read_input.hpp: no
// pipe or device, at most file_mb); throws InputError naming the path when it cannot.
std::string read_file(const std::string& path);

}  // namespace attn
