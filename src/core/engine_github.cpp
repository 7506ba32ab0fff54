// Engine: what the GitHub Source asks of the domain state.
#include <set>

#include "core/logged_read.h"
#include "store/store.h"
#include "superagent/engine.h"

namespace superagent {

std::vector<std::string> Engine::OpenTicketThreads(const std::string& prefix) {
  std::lock_guard<std::mutex> lock(mu_);
  std::set<std::string> keys;
  // The GitHub Source only narrows its reads with these: a failed read logs and reads as none.
  for (TicketId id : LoggedRead(store_->OpenTickets(), "open tickets"))
    for (const std::string& thread : LoggedRead(store_->TicketThreads(id), "ticket threads"))
      if (thread.rfind(prefix, 0) == 0) keys.insert(thread);
  return {keys.begin(), keys.end()};
}

}  // namespace superagent
