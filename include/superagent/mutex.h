// A mutex whose lock rules the compiler checks (Clang's thread-safety analysis; no-ops for other
// compilers). `GUARDED_BY(mu_)` on a member, `REQUIRES(mu_)` on a helper that must run under the
// lock (the Engine's `…Locked` helpers): a clang build with -Wthread-safety refuses code that
// touches the member or calls the helper without holding it. CMakeLists.txt turns the warnings
// into errors whenever the compiler is Clang (the fuzz build, which CI runs).
#pragma once

#include <mutex>

#if defined(__clang__)
#define SA_THREAD_ANNOTATION(x) __attribute__((x))
#else
#define SA_THREAD_ANNOTATION(x)
#endif

#define CAPABILITY(x) SA_THREAD_ANNOTATION(capability(x))
#define SCOPED_CAPABILITY SA_THREAD_ANNOTATION(scoped_lockable)
#define GUARDED_BY(x) SA_THREAD_ANNOTATION(guarded_by(x))
#define PT_GUARDED_BY(x) SA_THREAD_ANNOTATION(pt_guarded_by(x))
#define REQUIRES(...) SA_THREAD_ANNOTATION(requires_capability(__VA_ARGS__))
#define ACQUIRE(...) SA_THREAD_ANNOTATION(acquire_capability(__VA_ARGS__))
#define RELEASE(...) SA_THREAD_ANNOTATION(release_capability(__VA_ARGS__))
#define EXCLUDES(...) SA_THREAD_ANNOTATION(locks_excluded(__VA_ARGS__))
#define ASSERT_CAPABILITY(x) SA_THREAD_ANNOTATION(assert_capability(x))
#define NO_THREAD_SAFETY_ANALYSIS SA_THREAD_ANNOTATION(no_thread_safety_analysis)

namespace superagent {

// std::mutex, annotated as a capability.
class CAPABILITY("mutex") Mutex {
 public:
  void Lock() ACQUIRE() { mu_.lock(); }
  void Unlock() RELEASE() { mu_.unlock(); }
  // Tells the analysis the caller holds this mutex, where it cannot see it: a lambda runs inside
  // a locked method, but Clang analyses its body as a function of its own. Checks nothing at run
  // time.
  void AssertHeld() const ASSERT_CAPABILITY(this) {}

 private:
  std::mutex mu_;
};

// Holds `mu` for its scope (std::lock_guard, annotated).
class SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex* mu) ACQUIRE(mu) : mu_(mu) { mu_->Lock(); }
  ~MutexLock() RELEASE() { mu_->Unlock(); }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

 private:
  Mutex* mu_;
};

// What std::condition_variable_any waits with, over a Mutex the caller holds: the wait releases and
// takes it again, which the analysis cannot follow; to the code around the wait the mutex is held
// throughout, as it is. Usage: `MutexWaitable w{&mu_}; cv_.wait_for(w, …);` under MutexLock.
struct MutexWaitable {
  Mutex* mu;
  void lock() NO_THREAD_SAFETY_ANALYSIS { mu->Lock(); }
  void unlock() NO_THREAD_SAFETY_ANALYSIS { mu->Unlock(); }
};

}  // namespace superagent
