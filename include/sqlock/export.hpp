// SQLOCK_API marks what sqlock's libraries export. They are built with hidden visibility, so a
// shared build exports only its public API; exception and backend classes are exported whole,
// so their type information is one across the libraries, the backend modules and the program.
#pragma once

#define SQLOCK_API __attribute__((visibility("default")))
