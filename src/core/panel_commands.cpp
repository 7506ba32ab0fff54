// Engine: commands people give in the panel that are not already part of another transaction.
#include "store/store.h"
#include "superagent/engine.h"
#include "superagent/text.h"

namespace superagent {

Status Engine::RecordCommand(const std::string& who, const std::string& command, const std::string& target,
                             const std::string& detail) {
  std::lock_guard<std::mutex> lock(mu_);
  if (who.empty() || command.empty()) return Status::InvalidArgument("a command must say who gave it and what it is");
  auto tx = store_->Begin();
  if (!tx->begin_status().ok()) return tx->begin_status();
  if (Status s = store_->InsertCommand(clock_->NowMs(), text::Repair(who), command, target, text::Repair(detail)); !s.ok()) return s;
  return tx->Commit();
}

}  // namespace superagent
