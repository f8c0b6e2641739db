<#
.SYNOPSIS
  Open a TCP connection with a timeout and print one JSON line. Exit code 0 when it connected.
.EXAMPLE
  powershell.exe -NoProfile -File C:\wincon\tcp.ps1 -Address 10.0.0.1 -Port 443 -TimeoutSeconds 10
#>
param(
    [Parameter(Mandatory = $true)][string]$Address,
    [Parameter(Mandatory = $true)][ValidateRange(1, 65535)][int]$Port,
    [ValidateRange(1, 600)][int]$TimeoutSeconds = 10
)
$result = [ordered]@{ tool = 'tcp'; address = $Address; port = $Port; ok = $false; error = '' }
$client = New-Object System.Net.Sockets.TcpClient
try {
    $task = $client.ConnectAsync($Address, $Port)
    if ($task.Wait([TimeSpan]::FromSeconds($TimeoutSeconds))) {
        $result.ok = $client.Connected
    } else {
        $result.error = "no connection within $TimeoutSeconds s"
    }
} catch {
    $result.error = $_.Exception.GetBaseException().Message
} finally {
    $client.Dispose()
}
$result | ConvertTo-Json -Compress
if ($result.ok) { exit 0 } else { exit 1 }
