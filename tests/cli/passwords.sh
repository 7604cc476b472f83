# Passwords outside the command line, as docs/cli.md promises: $SQLOCK_URL is the store unless
# --url names another; a PostgreSQL URL without a password takes libpq's PGPASSWORD, a MySQL one
# the connector's MYSQL_PWD (SQLOCK_CLI_POSTGRES=1 / SQLOCK_CLI_MYSQL=1 when built in); a
# refused password exits 77 and is never printed.
source "$(dirname "$0")/lib.sh"

"$sqlock" run env-lock -- sleep 60 &
for _ in $(seq 100); do "$sqlock" list | grep -q '^env-lock ' && break; sleep 0.1; done
check "\$SQLOCK_URL is the default store" 1 "$("$sqlock" list | grep -c '^env-lock ')"
check "--url wins over \$SQLOCK_URL" "no locks held" "$("$sqlock" list --url "sqlite:$dir/other.db")"

# env_password NAME VAR URL: URL without its password, the password given in VAR instead.
env_password() {
  local name=$1 var=$2 url=$3 user_part password nopw code
  user_part=$(sed -E 's#^([a-z]+://[^:/@]+):([^@]*)@.*#\1#' <<<"$url")
  password=$(sed -E 's#^[a-z]+://[^:/@]+:([^@]*)@.*#\1#' <<<"$url")
  nopw=$user_part@${url#*@}
  env "$var=$password" "$sqlock" list --url "$nopw" >/dev/null 2>"$dir/$var.err"
  code=$?
  check "$name: \$$var is the password (exit 0, or 78 for the schema: not 77 or 69)" yes \
    "$([[ $code == 0 || ($code == 78 && $(cat "$dir/$var.err") == *schema*) ]] && echo yes)"
  env "$var=wrong-password-for-test" "$sqlock" list --url "$nopw" >/dev/null 2>"$dir/$var.err"
  check "$name: a wrong \$$var exits 77" 77 $?
  SQLOCK_URL="$user_part:wrong-password-for-test@${url#*@}" "$sqlock" list 2>"$dir/$var.err"
  check "$name: a wrong password in \$SQLOCK_URL exits 77" 77 $?
  check "$name: the password is not printed" 0 "$(grep -c wrong-password-for-test "$dir/$var.err")"
}

for store in POSTGRES:PGPASSWORD MYSQL:MYSQL_PWD; do
  name=${store%%:*}
  [ "$(eval echo "\${SQLOCK_CLI_$name:-}")" = 1 ] || continue
  url=$(eval echo "\${SQLOCK_TEST_${name}_URL:-}")
  if [ -n "$url" ]; then
    env_password "$name" "${store#*:}" "$url"
  elif [ "${SQLOCK_TEST_REQUIRE_ALL:-}" = 1 ]; then
    check "SQLOCK_TEST_${name}_URL set under SQLOCK_TEST_REQUIRE_ALL" set unset
  else
    echo "skip: ${store#*:} (SQLOCK_TEST_${name}_URL unset)"
  fi
done
finish passwords
