// Which platforms are chats (chat.h).
#include "superagent/chat.h"

#include "superagent/text.h"

namespace superagent {

bool IsChat(const std::string& channel_or_source) {
  for (const std::string platform : {"feishu", "panel"}) {
    if (channel_or_source.compare(0, platform.size(), platform) == 0 &&
        (channel_or_source.size() == platform.size() || channel_or_source[platform.size()] == ':'))
      return true;
  }
  return false;
}

std::string ChatTooLong(const std::string& body, std::size_t max_words) {
  if (std::size_t words = text::CountWords(body); words > max_words)
    return "chat messages may have at most " + std::to_string(max_words) + " words; this one has " +
           std::to_string(words);
  return "";
}

}  // namespace superagent
