<#
.SYNOPSIS
  Send ICMP echo requests and print one JSON line with the replies. Exit code 0 when any reply came.
.DESCRIPTION
  ICMP egress through win-overlay, win-bridge and Azure CNI gets no reply while TCP works
  (000_4130a90def37a825.txt, Networking): the suite pairs this with tcp.ps1 on the same target.
.EXAMPLE
  powershell.exe -NoProfile -File C:\wincon\icmp.ps1 -Address 10.244.1.5 -Count 3
#>
param(
    [Parameter(Mandatory = $true)][string]$Address,
    [ValidateRange(1, 20)][int]$Count = 3,
    [ValidateRange(100, 60000)][int]$TimeoutMs = 2000
)
$result = [ordered]@{ tool = 'icmp'; address = $Address; sent = $Count; received = 0; statuses = @(); ok = $false; error = '' }
$ping = New-Object System.Net.NetworkInformation.Ping
try {
    for ($i = 0; $i -lt $Count; $i++) {
        try {
            $reply = $ping.Send($Address, $TimeoutMs)
            $result.statuses += [string]$reply.Status
            if ($reply.Status -eq [System.Net.NetworkInformation.IPStatus]::Success) { $result.received++ }
        } catch {
            $result.statuses += 'Error'
            $result.error = $_.Exception.GetBaseException().Message
        }
    }
} finally {
    $ping.Dispose()
}
$result.ok = $result.received -gt 0
$result | ConvertTo-Json -Compress
if ($result.ok) { exit 0 } else { exit 1 }
