// Engine: what the GitHub Source asks of the domain state.
#include <set>

#include "store/store.h"
#include "superagent/engine.h"

namespace superagent {

std::vector<std::string> Engine::OpenTicketThreads(const std::string& prefix) {
  std::lock_guard<std::mutex> lock(mu_);
  std::set<std::string> keys;
  for (TicketId id : store_->OpenTickets())
    for (const std::string& thread : store_->TicketThreads(id))
      if (thread.rfind(prefix, 0) == 0) keys.insert(thread);
  return {keys.begin(), keys.end()};
}

}  // namespace superagent
