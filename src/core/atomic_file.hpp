// Writing output files all or nothing: every target is checked before any is
// touched, every content goes to a temporary file beside its target, and only
// when all are written are they renamed over their targets.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace attn {

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

// The files of one command, written together. A temporary file is named
// `.NAME.tmp-PID` beside its target; one that a process which is gone left
// (a kill -9, a power cut) for a file a commit writes is removed.
class FileBatch {
 public:
  // Queues `content` for `path`. `source` names where it comes from (a lesson
  // file, a student), for the error when two entries have one target.
  void add(std::string path, std::string content, std::string source = {});

  // Writes every queued file, or none. First checks every target: its folder
  // exists or can be created (a dangling symbolic link is named as such), the
  // target is not a folder, no two entries (or a file and a folder) share a
  // path, and a file whose content would change is replaced only when
  // `replace` is true (a read-only one is named as read-only; replaced, it
  // keeps its mode, and its owner where this process may set it). Then writes the temporary files
  // and renames them. Any failure before the renames removes the temporaries and the folders it
  // made and throws InputError saying that nothing was changed; `refusal_hint`
  // ends the message that lists the files that would change ("add --force to
  // replace them"). A file that would not change is left untouched.
  CommitResult commit(bool replace, std::string_view refusal_hint);

 private:
  struct Entry {
    std::string path;
    std::string content;
    std::string source;
  };
  std::vector<Entry> entries_;
};

// A batch of one file, replaced when it differs (the old file stays whole on
// any failure).
void write_file_atomically(const std::string& path, const std::string& content);

// Reads a whole regular file (read_regular_file of core/read_input.hpp: no
// pipe or device, at most file_mb); throws InputError naming the path when it cannot.
std::string read_file(const std::string& path);

}  // namespace attn
