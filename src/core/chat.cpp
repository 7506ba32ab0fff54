// Which platforms are chats (chat.h).
#include "superagent/chat.h"

namespace superagent {

bool IsChat(const std::string& channel_or_source) {
  for (const std::string platform : {"feishu", "panel"}) {
    if (channel_or_source.compare(0, platform.size(), platform) == 0 &&
        (channel_or_source.size() == platform.size() || channel_or_source[platform.size()] == ':'))
      return true;
  }
  return false;
}

}  // namespace superagent
