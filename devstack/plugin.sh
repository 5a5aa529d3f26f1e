#!/usr/bin/env bash
# devstack/plugin.sh: Inspector's devstack plugin (devstack/README.md).
#
#   [[local|localrc]]
#   enable_plugin ironic https://opendev.org/openstack/ironic stable/2025.2
#   enable_plugin inspector <this repository's URL or path> [branch]
#
# stack.sh sources this file once per phase, with devstack's functions and the variables
# of devstack/settings defined: `plugin.sh stack install|post-config|extra|test-config`,
# `plugin.sh unstack`, `plugin.sh clean`. Functions only above the entry points, so that
# tests/unit/test_deploy_files.py can source it and call the render_* functions, which
# use no devstack function.

# ---------------------------------------------------------------- rendering etc/inspector

# _inspector_set_line FILE PREFIX [LINE]: replace the one line of FILE starting with
# PREFIX by LINE, or delete it without LINE. Fails unless exactly one line matches, so
# that a changed template stops stack.sh instead of leaving a setting behind.
function _inspector_set_line {
    local file=$1 prefix=$2 count
    count=$(PREFIX="$prefix" awk 'index($0, ENVIRON["PREFIX"]) == 1 { n++ } END { print n + 0 }' "$file")
    if [[ "$count" != 1 ]]; then
        echo "inspector: $file has $count lines starting with '$prefix', expected 1" >&2
        return 1
    fi
    if [[ $# -ge 3 ]]; then
        PREFIX="$prefix" LINE="$3" awk \
            'index($0, ENVIRON["PREFIX"]) == 1 { print ENVIRON["LINE"]; next } { print }' \
            "$file" >"$file.new"
    else
        PREFIX="$prefix" awk 'index($0, ENVIRON["PREFIX"]) == 1 { next } { print }' \
            "$file" >"$file.new"
    fi
    mv "$file.new" "$file"
}

# The URL the boot files are served from: Ironic's HTTP server (iPXE), as for its own
# deployments.
function _inspector_boot_url {
    echo "http://$IRONIC_HTTP_SERVER:$IRONIC_HTTP_PORT"
}

# render_inspector_dnsmasq_conf TEMPLATE OUTPUT: etc/inspector/dnsmasq.conf for this host:
# its interface and DHCP pool, the hostsdir only with the dnsmasq driver, and Ironic's
# TFTP and HTTP servers for the boot files (devstack's Ironic already runs TFTP on port 69).
function render_inspector_dnsmasq_conf {
    local template=$1 out=$2
    cp "$template" "$out"
    _inspector_set_line "$out" "interface=" "interface=$INSPECTOR_INTERFACE"
    _inspector_set_line "$out" "dhcp-range=" "dhcp-range=$INSPECTOR_DHCP_RANGE"
    _inspector_set_line "$out" "dhcp-leasefile=" "dhcp-leasefile=$INSPECTOR_DATA_DIR/dnsmasq.leases"
    _inspector_set_line "$out" "pid-file=" "pid-file=$INSPECTOR_DATA_DIR/dnsmasq.pid"
    if [[ "$INSPECTOR_PXE_FILTER" == "dnsmasq" ]]; then
        _inspector_set_line "$out" "dhcp-hostsdir=" "dhcp-hostsdir=$INSPECTOR_DHCP_HOSTSDIR"
    else
        _inspector_set_line "$out" "dhcp-hostsdir="
        _inspector_set_line "$out" "dhcp-ignore=tag:!known"
    fi
    _inspector_set_line "$out" "enable-tftp"
    _inspector_set_line "$out" "tftp-root="
    _inspector_set_line "$out" "dhcp-boot=tag:!ipxe,tag:!efi," \
        "dhcp-boot=tag:!ipxe,tag:!efi,inspector-undionly.kpxe,,$IRONIC_TFTPSERVER_IP"
    _inspector_set_line "$out" "dhcp-boot=tag:!ipxe,tag:efi," \
        "dhcp-boot=tag:!ipxe,tag:efi,inspector-snponly.efi,,$IRONIC_TFTPSERVER_IP"
    _inspector_set_line "$out" "dhcp-boot=tag:ipxe," \
        "dhcp-boot=tag:ipxe,$(_inspector_boot_url)/inspector.ipxe"
}

# render_inspector_ipxe TEMPLATE OUTPUT: etc/inspector/inspector.ipxe with devstack's
# boot URL, the callback URL of HAProxy's frontend and the ramdisk's options (and
# without the template's comments, which describe the example).
function render_inspector_ipxe {
    local template=$1 out=$2
    sed -e '2,${/^#/d;}' \
        -e "s|http://\${next-server}:8088|$(_inspector_boot_url)|g" \
        -e "s|ipa-inspection-callback-url=[^ ]*|ipa-inspection-callback-url=$INSPECTOR_URI/v1/continue|" \
        -e "s|ipa-inspection-collectors=[^ ]*|ipa-inspection-collectors=$INSPECTOR_RAMDISK_COLLECTORS|" \
        -e "s|systemd.journald.forward_to_console=yes|& $INSPECTOR_EXTRA_KERNEL_CMDLINE|" \
        "$template" >"$out"
    if grep -q -e 'next-server' -e '198\.51\.100\.' "$out"; then
        echo "inspector: $template changed: $out still names the example's addresses" >&2
        return 1
    fi
}

# render_inspector_haproxy_cfg TEMPLATE OUTPUT: etc/inspector/haproxy.cfg for an HAProxy
# run by devstack as the stack user in the foreground: no user/group/daemon, its own
# stats socket, one frontend address, and INSPECTOR_API_WORKERS back ends per API host.
function render_inspector_haproxy_cfg {
    local template=$1 out=$2 servers="" host port index=0
    for host in $INSPECTOR_API_HOSTS; do
        for ((port = INSPECTOR_API_PORT_BASE + 1; port <= INSPECTOR_API_PORT_BASE + INSPECTOR_API_WORKERS; port++)); do
            index=$((index + 1))
            servers+="    server api-$index $host:$port check"$'\n'
        done
    done
    BIND="$INSPECTOR_SERVICE_HOST:$INSPECTOR_SERVICE_PORT" \
        SOCKET="$INSPECTOR_DATA_DIR/haproxy.sock" SERVERS="$servers" awk '
        /^[ \t]*(user|group|daemon)([ \t]|$)/ { next }
        /^[ \t]*stats socket / { print "    stats socket " ENVIRON["SOCKET"] " mode 600 level admin"; next }
        /^[ \t]*bind / { next }
        /^[ \t]*server / { next }
        { print }
        /^frontend inspector([ \t]|$)/ { print "    bind " ENVIRON["BIND"] }
        /^[ \t]*default-server / { printf "%s", ENVIRON["SERVERS"] }
    ' "$template" >"$out"
}

# ---------------------------------------------------------------- URLs of the backends

function _inspector_redis_url {
    echo "redis://:$INSPECTOR_REDIS_PASSWORD@$INSPECTOR_REDIS_HOST:$INSPECTOR_REDIS_PORT"
}

function _inspector_queue_url {
    case "$INSPECTOR_QUEUE_BACKEND" in
        rabbit) echo "amqp://$RABBIT_USERID:$RABBIT_PASSWORD@$RABBIT_HOST:5672//" ;;
        redis) echo "$(_inspector_redis_url)/0" ;;
        *) die "$LINENO" "INSPECTOR_QUEUE_BACKEND=$INSPECTOR_QUEUE_BACKEND: rabbit or redis" ;;
    esac
}

# ---------------------------------------------------------------- install

function install_inspector {
    if is_service_enabled inspector-dnsmasq; then
        # The binary without Debian's system-wide dnsmasq service; ipxe: the chain-loaders.
        install_package dnsmasq-base ipxe
    fi
    if is_service_enabled inspector-haproxy; then
        install_package haproxy
    fi
    if is_service_enabled inspector-redis; then
        install_package redis-server
    fi
    case "$INSPECTOR_PXE_FILTER" in
        nftables) install_package nftables ;;
        iptables) install_package iptables ;;
        ipset) install_package iptables ipset ;;
    esac
    # Under devstack's upper-constraints, as OpenStack installs every service.
    setup_develop "$INSPECTOR_DIR" mysql,postgresql,wsgi
}

# ---------------------------------------------------------------- post-config

function configure_inspector_redis {
    # Appended to Debian's file (a later directive wins), replaced on every stack.sh.
    sudo sed -i -e '/^# BEGIN inspector devstack/,/^# END inspector devstack/d' "$INSPECTOR_REDIS_CONF"
    local bind="127.0.0.1 -::1"
    if [[ "$INSPECTOR_REDIS_HOST" != "127.0.0.1" ]]; then
        bind="$bind $INSPECTOR_REDIS_HOST"
    fi
    sudo tee -a "$INSPECTOR_REDIS_CONF" >/dev/null <<EOF
# BEGIN inspector devstack
bind $bind
requirepass $INSPECTOR_REDIS_PASSWORD
# END inspector devstack
EOF
    restart_service redis-server
}

function configure_inspector {
    sudo install -d -o "$STACK_USER" "$INSPECTOR_CONF_DIR" "$INSPECTOR_DATA_DIR" \
        "$INSPECTOR_DATA_DIR/ramdisk-logs" "$INSPECTOR_DHCP_HOSTSDIR"
    rm -f "$INSPECTOR_CONF"

    iniset "$INSPECTOR_CONF" DEFAULT debug "$INSPECTOR_DEBUG"
    iniset "$INSPECTOR_CONF" DEFAULT state_path "$INSPECTOR_DATA_DIR"
    iniset "$INSPECTOR_CONF" DEFAULT auth_strategy "$INSPECTOR_AUTH_STRATEGY"
    # HAProxy sets X-Forwarded-For/Proto/Port: links name the frontend, and /v1/continue
    # sees the ramdisk's address.
    iniset "$INSPECTOR_CONF" oslo_middleware enable_proxy_headers_parsing True

    iniset "$INSPECTOR_CONF" database connection "$(database_connection_url inspector)"
    iniset "$INSPECTOR_CONF" queue transport_url "$(_inspector_queue_url)"
    iniset "$INSPECTOR_CONF" coordination backend_url "$(_inspector_redis_url)"

    # Ironic, through keystone, as the inspector service user.
    iniset "$INSPECTOR_CONF" ironic auth_type password
    iniset "$INSPECTOR_CONF" ironic auth_url "$KEYSTONE_SERVICE_URI"
    iniset "$INSPECTOR_CONF" ironic username "$INSPECTOR_SERVICE_USER"
    iniset "$INSPECTOR_CONF" ironic password "$SERVICE_PASSWORD"
    iniset "$INSPECTOR_CONF" ironic project_name "$SERVICE_PROJECT_NAME"
    iniset "$INSPECTOR_CONF" ironic user_domain_id default
    iniset "$INSPECTOR_CONF" ironic project_domain_id default
    iniset "$INSPECTOR_CONF" ironic region_name "$REGION_NAME"
    if [[ -n "${SSL_BUNDLE_FILE:-}" ]]; then
        iniset "$INSPECTOR_CONF" ironic cafile "$SSL_BUNDLE_FILE"
    fi

    if [[ "$INSPECTOR_AUTH_STRATEGY" == "keystone" ]]; then
        configure_keystone_authtoken_middleware "$INSPECTOR_CONF" "$INSPECTOR_SERVICE_USER"
    fi

    iniset "$INSPECTOR_CONF" processing store_data database
    iniset "$INSPECTOR_CONF" processing ramdisk_logs_dir "$INSPECTOR_DATA_DIR/ramdisk-logs"
    iniset "$INSPECTOR_CONF" processing always_store_ramdisk_logs True

    # The PXE firewall: the stack user has sudo.
    iniset "$INSPECTOR_CONF" pxe_filter driver "$INSPECTOR_PXE_FILTER"
    iniset "$INSPECTOR_CONF" pxe_filter root_helper "sudo -n"
    iniset "$INSPECTOR_CONF" iptables dnsmasq_interface "$INSPECTOR_INTERFACE"
    iniset "$INSPECTOR_CONF" dnsmasq_pxe_filter dhcp_hostsdir "$INSPECTOR_DHCP_HOSTSDIR"
    iniset "$INSPECTOR_CONF" dnsmasq_pxe_filter purge_dhcp_hostsdir True
    iniset "$INSPECTOR_CONF" dnsmasq_pxe_filter dnsmasq_start_command "systemctl start devstack@inspector-dnsmasq"
    iniset "$INSPECTOR_CONF" dnsmasq_pxe_filter dnsmasq_stop_command "systemctl stop devstack@inspector-dnsmasq"

    "$INSPECTOR_BIN_DIR/inspector" config check --role api --config-file "$INSPECTOR_CONF"
    "$INSPECTOR_BIN_DIR/inspector" config check --role worker --config-file "$INSPECTOR_CONF"

    if is_service_enabled inspector-dnsmasq; then
        render_inspector_dnsmasq_conf "$INSPECTOR_DIR/etc/inspector/dnsmasq.conf" "$INSPECTOR_DNSMASQ_CONF"
        "$INSPECTOR_DNSMASQ_BIN" --test --conf-file="$INSPECTOR_DNSMASQ_CONF"
    fi
    if is_service_enabled inspector-haproxy; then
        render_inspector_haproxy_cfg "$INSPECTOR_DIR/etc/inspector/haproxy.cfg" "$INSPECTOR_CONF_DIR/haproxy.cfg"
        "$INSPECTOR_HAPROXY_BIN" -c -q -f "$INSPECTOR_CONF_DIR/haproxy.cfg"
    fi
}

function create_inspector_accounts {
    create_service_user "$INSPECTOR_SERVICE_USER" "admin"
    get_or_create_service "inspector" "baremetal-introspection" "Bare metal introspection (Inspector)"
    get_or_create_endpoint "baremetal-introspection" "$REGION_NAME" \
        "$INSPECTOR_URI" "$INSPECTOR_URI" "$INSPECTOR_URI"
}

# The database lives on the host running the database server; other hosts find it there.
function init_inspector_database {
    recreate_database inspector
    "$INSPECTOR_BIN_DIR/inspector" db upgrade --config-file "$INSPECTOR_CONF"
}

# Ironic (up to 2025.2) calls us through its `inspector` inspect interface.
function configure_ironic_for_inspector {
    iniset "$IRONIC_CONF_FILE" DEFAULT enabled_inspect_interfaces "$INSPECTOR_IRONIC_INSPECT_INTERFACES"
    # A default that is no longer enabled would stop Ironic.
    local default
    default=$(iniget "$IRONIC_CONF_FILE" DEFAULT default_inspect_interface)
    if [[ -n "$default" && ",$INSPECTOR_IRONIC_INSPECT_INTERFACES," != *",$default,"* ]]; then
        iniset "$IRONIC_CONF_FILE" DEFAULT default_inspect_interface inspector
    fi
    iniset "$IRONIC_CONF_FILE" inspector endpoint_override "$INSPECTOR_URI"
    # When Ironic boots the ramdisk itself (managed boot), where it posts its data (Ironic
    # appends /v1/continue): HAProxy's frontend too.
    iniset "$IRONIC_CONF_FILE" inspector callback_endpoint_override "$INSPECTOR_URI"
    iniset "$IRONIC_CONF_FILE" inspector extra_kernel_params \
        "ipa-inspection-collectors=$INSPECTOR_RAMDISK_COLLECTORS ipa-collect-lldp=1"
    # Credentials for calling us, unless Ironic's plugin wrote them already.
    if [[ -z "$(iniget "$IRONIC_CONF_FILE" inspector auth_type)" ]]; then
        iniset "$IRONIC_CONF_FILE" inspector auth_type password
        iniset "$IRONIC_CONF_FILE" inspector auth_url "$KEYSTONE_SERVICE_URI"
        iniset "$IRONIC_CONF_FILE" inspector username ironic
        iniset "$IRONIC_CONF_FILE" inspector password "$SERVICE_PASSWORD"
        iniset "$IRONIC_CONF_FILE" inspector project_name "$SERVICE_PROJECT_NAME"
        iniset "$IRONIC_CONF_FILE" inspector user_domain_id default
        iniset "$IRONIC_CONF_FILE" inspector project_domain_id default
        iniset "$IRONIC_CONF_FILE" inspector region_name "$REGION_NAME"
    fi
}

# ---------------------------------------------------------------- extra

# The provisioning network's interface: a veth pair into Ironic's bare metal bridge,
# this host's address, and the ports the nodes reach from it.
function prepare_inspector_network {
    if [[ "$INSPECTOR_INTERFACE_PHYSICAL" == "False" ]] && ! ip link show "$INSPECTOR_INTERFACE" >/dev/null 2>&1; then
        sudo ip link add "$INSPECTOR_OVS_PORT" type veth peer name "$INSPECTOR_INTERFACE"
        sudo ip link set dev "$INSPECTOR_OVS_PORT" up
        sudo ovs-vsctl --may-exist add-port "$IRONIC_VM_NETWORK_BRIDGE" "$INSPECTOR_OVS_PORT"
    fi
    sudo ip link set dev "$INSPECTOR_INTERFACE" up
    sudo ip addr replace "$INSPECTOR_INTERNAL_IP/$INSPECTOR_INTERNAL_SUBNET_SIZE" dev "$INSPECTOR_INTERFACE"
    local spec proto port
    for spec in "udp 69" "tcp $IRONIC_HTTP_PORT" "tcp $INSPECTOR_SERVICE_PORT"; do
        read -r proto port <<<"$spec"
        if ! sudo iptables -C INPUT -i "$INSPECTOR_INTERFACE" -p "$proto" --dport "$port" -j ACCEPT 2>/dev/null; then
            sudo iptables -I INPUT -i "$INSPECTOR_INTERFACE" -p "$proto" --dport "$port" -j ACCEPT
        fi
    done
}

# The iPXE chain-loaders into Ironic's TFTP root, the script and the ramdisk into its
# HTTP root.
function prepare_inspector_boot_files {
    local kernel=${INSPECTOR_RAMDISK_KERNEL:-${IRONIC_DEPLOY_KERNEL:-}}
    local initramfs=${INSPECTOR_RAMDISK_INITRAMFS:-${IRONIC_DEPLOY_RAMDISK:-}}
    if [[ ! -f "$kernel" || ! -f "$initramfs" ]]; then
        die "$LINENO" "no ramdisk: set INSPECTOR_RAMDISK_KERNEL and INSPECTOR_RAMDISK_INITRAMFS" \
            "(or let Ironic's plugin provide IRONIC_DEPLOY_KERNEL and IRONIC_DEPLOY_RAMDISK)"
    fi
    if [[ ! -d "$IRONIC_TFTPBOOT_DIR" || ! -d "$IRONIC_HTTP_DIR" ]]; then
        die "$LINENO" "Ironic's TFTP and HTTP roots are missing: IRONIC_IPXE_ENABLED=True is needed"
    fi
    cp /usr/lib/ipxe/undionly.kpxe "$IRONIC_TFTPBOOT_DIR/inspector-undionly.kpxe"
    cp /usr/lib/ipxe/snponly.efi "$IRONIC_TFTPBOOT_DIR/inspector-snponly.efi"
    cp "$kernel" "$IRONIC_HTTP_DIR/inspector-agent.kernel"
    cp "$initramfs" "$IRONIC_HTTP_DIR/inspector-agent.initramfs"
    render_inspector_ipxe "$INSPECTOR_DIR/etc/inspector/inspector.ipxe" "$IRONIC_HTTP_DIR/inspector.ipxe"
}

function start_inspector {
    local index port
    if is_service_enabled inspector-worker; then
        run_process inspector-worker "$INSPECTOR_BIN_DIR/inspector worker --config-file $INSPECTOR_CONF"
    fi
    if is_service_enabled inspector-dnsmasq; then
        run_process inspector-dnsmasq \
            "$INSPECTOR_DNSMASQ_BIN --keep-in-foreground --conf-file=$INSPECTOR_DNSMASQ_CONF" "" root
    fi
    if is_service_enabled inspector-api; then
        for ((index = 1; index <= INSPECTOR_API_WORKERS; index++)); do
            port=$((INSPECTOR_API_PORT_BASE + index))
            run_process "inspector-api-$index" "/usr/bin/env INSPECTOR_CONFIG_FILES=$INSPECTOR_CONF \
$INSPECTOR_BIN_DIR/gunicorn --bind $INSPECTOR_API_LISTEN_ADDRESS:$port \
--workers $INSPECTOR_GUNICORN_WORKERS --worker-class gthread --threads 8 \
--timeout 60 --graceful-timeout 30 --access-logfile - inspector.api.wsgi:application"
        done
    fi
    if is_service_enabled inspector-haproxy; then
        run_process inspector-haproxy "$INSPECTOR_HAPROXY_BIN -db -f $INSPECTOR_CONF_DIR/haproxy.cfg"
        # A 200 from /healthcheck: at least one API process is up behind HAProxy and
        # reaches the database (HAProxy itself answers 503 at once).
        echo "Waiting for Inspector's API at $INSPECTOR_URI"
        if ! timeout "$SERVICE_TIMEOUT" bash -c \
            "until curl -fs -o /dev/null '$INSPECTOR_URI/healthcheck'; do sleep 1; done"; then
            die "$LINENO" "Inspector's API did not answer at $INSPECTOR_URI/healthcheck"
        fi
    fi
}

# ---------------------------------------------------------------- unstack, clean

function stop_inspector {
    local index
    stop_process inspector-haproxy
    for ((index = 1; index <= INSPECTOR_API_WORKERS; index++)); do
        stop_process "inspector-api-$index"
    done
    # The worker first: its firewall closes, and it stops its dnsmasq (dnsmasq driver).
    stop_process inspector-worker
    stop_process inspector-dnsmasq
}

# What a stopped worker leaves closed in the kernel, and the ports opened above.
function cleanup_inspector_firewall {
    local chain=ironic-inspector rule spec proto port
    sudo iptables -w -D INPUT -i "$INSPECTOR_INTERFACE" -p udp --dport 67 -j "$chain" 2>/dev/null || true
    for rule in "$chain" "$chain-wl" "$chain-bl"; do
        sudo iptables -w -F "$rule" 2>/dev/null || true
        sudo iptables -w -X "$rule" 2>/dev/null || true
    done
    if command -v ipset >/dev/null; then
        sudo ipset destroy "$chain-wl" 2>/dev/null || true
        sudo ipset destroy "$chain-bl" 2>/dev/null || true
    fi
    if command -v nft >/dev/null; then
        sudo nft delete table inet "$chain" 2>/dev/null || true
    fi
    for spec in "udp 69" "tcp ${IRONIC_HTTP_PORT:-3928}" "tcp $INSPECTOR_SERVICE_PORT"; do
        read -r proto port <<<"$spec"
        sudo iptables -D INPUT -i "$INSPECTOR_INTERFACE" -p "$proto" --dport "$port" -j ACCEPT 2>/dev/null || true
    done
}

function cleanup_inspector {
    rm -f "${IRONIC_TFTPBOOT_DIR:?}"/inspector-* "${IRONIC_HTTP_DIR:?}"/inspector-* "$IRONIC_HTTP_DIR/inspector.ipxe"
    if [[ "$INSPECTOR_INTERFACE_PHYSICAL" == "False" ]]; then
        sudo ip link delete "$INSPECTOR_OVS_PORT" 2>/dev/null || true
        sudo ovs-vsctl --if-exists del-port "$INSPECTOR_OVS_PORT" 2>/dev/null || true
    fi
    sudo rm -rf "${INSPECTOR_DATA_DIR:?}" "${INSPECTOR_CONF_DIR:?}"
}

# ---------------------------------------------------------------- entry points

if [[ "${1:-}" == "stack" ]]; then
    case "${2:-}" in
        install)
            echo_summary "Installing Inspector"
            install_inspector
            ;;
        post-config)
            echo_summary "Configuring Inspector"
            if is_service_enabled inspector-redis; then
                configure_inspector_redis
            fi
            configure_inspector
            if is_service_enabled key; then
                create_inspector_accounts
            fi
            if is_service_enabled mysql postgresql; then
                init_inspector_database
            fi
            if is_service_enabled ir-api ir-cond; then
                configure_ironic_for_inspector
            fi
            ;;
        extra)
            echo_summary "Starting Inspector"
            if is_service_enabled inspector-dnsmasq; then
                prepare_inspector_network
                prepare_inspector_boot_files
            fi
            start_inspector
            ;;
    esac
fi

if [[ "${1:-}" == "unstack" ]]; then
    stop_inspector
    cleanup_inspector_firewall
fi

if [[ "${1:-}" == "clean" ]]; then
    cleanup_inspector
fi
