// One writer per folder: a command that writes a whole folder (mark DIR,
// exercise --out DIR, golden --out DIR) holds an exclusive lock on it from
// before it reads the folder until its files are committed.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/atomic_file.hpp"

namespace attn {

// The lock file in a locked folder: made with O_NOFOLLOW (never through a
// link), holding the process id of the run that holds it, removed when the
// run ends (one a killed run left is taken over: flock locks die with their
// process).
inline constexpr const char* kFolderLockName = ".attn-trace.lock";

class FolderLock {
 public:
  // What to do when the folder is not there yet.
  enum class Missing {
    create,  // make it (and the folders above it), removed again if it stays empty
    skip,    // hold no lock: the command refuses a missing folder itself
  };

  // Takes the lock on `folder` (a path the user gave: a symbolic link at or
  // above it is followed) without waiting: when another run holds it, throws
  // InputError "another attn-trace run (pid N) is writing FOLDER; wait for it
  // to finish". Then completes a commit that a killed run left half done
  // (finish_interrupted_commit; see finished()).
  FolderLock(std::string folder, Missing missing);
  ~FolderLock();
  FolderLock(const FolderLock&) = delete;
  FolderLock& operator=(const FolderLock&) = delete;

  const std::string& folder() const { return folder_; }
  bool held() const { return lock_fd_ >= 0; }
  // The interrupted commit this lock completed, if any: to be reported.
  const std::optional<FinishedCommit>& finished() const { return finished_; }

 private:
  void acquire();
  void release() noexcept;

  std::string folder_;
  int folder_fd_ = -1;
  int lock_fd_ = -1;
  std::vector<std::string> made_;  // folders the lock made, outermost first
  std::optional<FinishedCommit> finished_;
};

}  // namespace attn
