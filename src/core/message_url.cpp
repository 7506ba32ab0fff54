#include "core/message_url.h"

#include <algorithm>
#include <cctype>

namespace superagent {

MessageUrlForms MessageUrlFormsOf(const std::string& url) {
  MessageUrlForms f;
  std::string u = url;
  while (!u.empty() && std::isspace(static_cast<unsigned char>(u.back()))) u.pop_back();
  while (!u.empty() && std::isspace(static_cast<unsigned char>(u.front()))) u.erase(0, 1);
  f.tidy = u;
  const std::size_t hash = u.find('#');
  const std::string fragment = hash == std::string::npos ? "" : u.substr(hash);
  std::string path = u.substr(0, std::min(hash, u.find('?')));
  while (!path.empty() && path.back() == '/') path.pop_back();
  const std::size_t scheme = path.find("://");
  if (scheme == std::string::npos) return f;
  // Components after the host: OWNER, NAME, issues|pull, N, then any sub-page.
  std::vector<std::string> parts;
  for (std::size_t at = path.find('/', scheme + 3); at != std::string::npos;) {
    const std::size_t next = path.find('/', at + 1);
    parts.push_back(path.substr(at + 1, next == std::string::npos ? std::string::npos : next - at - 1));
    at = next;
  }
  if (parts.size() < 4 || parts[0].empty() || parts[1].empty() || (parts[2] != "issues" && parts[2] != "pull") ||
      parts[3].empty() || parts[3].find_first_not_of("0123456789") != std::string::npos)
    return f;
  const std::string repo = path.substr(0, path.find('/', scheme + 3)) + "/" + parts[0] + "/" + parts[1];
  f.tidy = repo + "/" + parts[2] + "/" + parts[3] + fragment;
  f.discussion = {repo + "/issues/" + parts[3], repo + "/pull/" + parts[3]};
  return f;
}

}  // namespace superagent
