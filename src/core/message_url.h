// A message's URL as a person pastes it into `explain` (issue 34): with a trailing slash, a query,
// a sub-page (/files), a fragment of a comment the daemon never received, or the URL of the whole
// issue or pull request rather than of the comment that asked. The store looks a Trigger up by
// these forms when the URL as given names none.
#pragma once

#include <string>
#include <vector>

namespace superagent {

struct MessageUrlForms {
  // The URL without query, trailing slash or sub-page, its fragment kept:
  // "https://github.com/o/r/issues/5#issuecomment-1". Equal to the input when there is nothing to
  // tidy or it is not an issue's or pull request's URL.
  std::string tidy;
  // The discussion it lies in, once as an issue and once as a pull request (GitHub answers an
  // issue URL for a pull request by redirecting to /pull/N, and keeps /pull/N in html_url):
  // {"https://github.com/o/r/issues/5", "https://github.com/o/r/pull/5"}; empty when the URL names
  // no issue or pull request.
  std::vector<std::string> discussion;
};

// The forms of `url` (scheme://host/OWNER/NAME/{issues|pull}/N[/…][?…][#…]). Pure.
MessageUrlForms MessageUrlFormsOf(const std::string& url);

}  // namespace superagent
